package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/dashboard"
)

// userLink creates a user through kino's user service (as `kino users
// create` does: an account's, or an operator when account is "") and
// returns its one-time set-password link.
func (h *harness) userLink(account, email string) string {
	h.t.Helper()
	_, token, err := h.m.users.CreateUser(context.Background(), accounts.NewUser{Email: email, Account: account, Operator: account == ""})
	if err != nil {
		h.t.Fatalf("create user %s: %v", email, err)
	}
	h.settle()
	return h.url + "/password?token=" + token
}

// session sets a user's password from its link and returns a client
// logged in with the session cookie.
func (h *harness) session(link, password string) *http.Client {
	h.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	token := link[strings.Index(link, "token=")+len("token="):]
	body, _ := json.Marshal(map[string]string{"token": token, "password": password})
	resp, err := c.Post(h.url+"/auth/password", "application/json", strings.NewReader(string(body)))
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		h.t.Fatalf("POST /auth/password: %d", resp.StatusCode)
	}
	return c
}

func getJSON(t *testing.T, c *http.Client, url string, out any) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserDashboard runs dashboard.mjs in Chromium against a kino with
// a transcoder and webhook delivery: the whole dashboard as its people use
// it (see the script), screenshotted into $KINO_SCREENSHOTS or a temp dir.
func TestBrowserDashboard(t *testing.T) {
	t.Parallel()
	b := browserTools(t)
	if !dashboard.AssetsBuilt() {
		msg := "the dashboard test needs tus-js-client built into kino: run `just assets`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	h := start(t, t.TempDir(), withTranscoder, withWebhooks)
	const password = "correct horse battery staple"
	h.mustCLI("accounts", "create", "acme", "--plan", string(domain.PlanBusiness))
	userLink := h.userLink("acme", "ana@acme.example")
	operatorLink := h.userLink("", "op@kino.example")

	// Another account's video, key and webhook, whose pages ana must not see.
	keyB := h.account("beta", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", keyB, map[string]string{"slug": "main", "name": "Main"}), 201)
	videoB := h.uploadID(keyB, "main", "b.mp4", clip(t))
	hookB, _ := h.subscribe(keyB, "https://example.com/hook", domain.EventVideoCompleted)
	bob := h.session(h.userLink("beta", "bob@beta.example"), password)
	var keys struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	getJSON(t, bob, h.url+"/v1/keys", &keys)
	if len(keys.Data) == 0 {
		t.Fatal("beta has no key")
	}

	rc := newReceiver(t)
	failing := newReceiver(t, 500, 500, 500) // gives up after three attempts; then 200
	shots := os.Getenv("KINO_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	clipFile := filepath.Join(t.TempDir(), "sunset-over-the-bay.mp4")
	if err := os.WriteFile(clipFile, makeClip(t, "clip.mp4", 640, 360, 4, true), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{
		"url": h.url, "userLink": userLink, "userEmail": "ana@acme.example", "operatorLink": operatorLink,
		"password": password, "receiver": rc.srv.URL + "/hooks/kino", "failingReceiver": failing.srv.URL + "/hooks/flaky", "clip": clipFile, "shots": shots,
		"other": map[string]string{"video": videoB, "key": keys.Data[0].ID, "webhook": hookB},
	})
	var res struct {
		OK          bool     `json:"ok"`
		Step        string   `json:"step"`
		Error       string   `json:"error"`
		Video       string   `json:"video"`
		StatusFirst string   `json:"statusSeenFirst"`
		Uploaded    string   `json:"uploadStatuses"`
		Refused     string   `json:"refusedDelete"`
		Verify      string   `json:"verify"`
		SignedLinks int      `json:"signedLinks"`
		Scenes      int      `json:"scenes"`
		Shots       []string `json:"shots"`
		Console     []string `json:"console"`
	}
	b.run(t, "dashboard", &res, "dashboard.mjs", string(cfg))
	// What the pages did, seen from the server's side.
	d := rc.next(t)
	if !strings.Contains(string(d.body), "webhook.test") {
		t.Fatalf("the receiver got %s", d.body)
	}
	t.Logf("uploaded %s through the page, which saw it %s; the list first saw it %s; deleting its collection: %q; verify: %q; %d media links got the playback token; %d storyboard scenes; %d screenshots in %s",
		res.Video, res.Uploaded, res.StatusFirst, res.Refused, res.Verify, res.SignedLinks, res.Scenes, len(res.Shots), shots)
}

// TestBrowserDashboardWhileProcessing runs dashboard_processing.mjs: a
// signed video plays on its dashboard page while it is still PROCESSING
// (with the page's playback token), and the page does not reload under
// it when processing ends. ffmpeg reads at twice the input's rate and
// its ladder does not end before the page has played a frame (the script
// creates the gate file of heldFFmpeg then), on a loaded machine too.
func TestBrowserDashboardWhileProcessing(t *testing.T) {
	// Not parallel, as TestBrowserProgressivePlayback.
	b := browserTools(t)
	if !dashboard.AssetsBuilt() {
		t.Skip("the dashboard test needs the dashboard's assets: run `just assets`")
	}
	clip := makeClip(t, "clip.mp4", 640, 360, 14, true)
	gate, held := heldFFmpeg(t)
	h := start(t, t.TempDir(), withTranscoder, held)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]any{"slug": "main", "name": "Main", "playbackPolicy": "signed"}), 201)
	link := h.userLink("acme", "ana@acme.example")
	id := h.uploadID(key, "main", "clip.mp4", clip)
	h.waitPlayable(id)
	shots := os.Getenv("KINO_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	cfg, _ := json.Marshal(map[string]any{"url": h.url, "userLink": link, "password": "correct horse battery staple", "video": id, "shots": shots, "gate": gate})
	var res struct {
		OK           bool     `json:"ok"`
		Step         string   `json:"step"`
		Error        string   `json:"error"`
		StatusAtPlay string   `json:"statusAtPlay"`
		FirstTime    float64  `json:"firstTime"`
		EndNote      string   `json:"endNote"`
		Console      []string `json:"console"`
	}
	b.run(t, "dashboard while processing", &res, "dashboard_processing.mjs", string(cfg))
	t.Logf("played (at %.1fs) while %s; at the end: %q", res.FirstTime, res.StatusAtPlay, res.EndNote)
}
