package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/dashboard"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// login creates a user (of account, or an operator when account is "")
// and returns a client holding its session cookie.
func login(t *testing.T, k kino, email, account string) *http.Client {
	t.Helper()
	_, token, err := k.users.CreateUser(context.Background(), accounts.NewUser{Email: email, Account: account, Operator: account == ""})
	if err != nil {
		t.Fatal(err)
	}
	k.Settle()
	jar, _ := cookiejar.New(nil)
	c := noFollow(jar)
	body, _ := json.Marshal(map[string]string{"token": token, "password": "correct horse battery staple"})
	req, _ := http.NewRequest("POST", k.URL+"/auth/password", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("set password of %s: %d", email, resp.StatusCode)
	}
	return c
}

func call(t *testing.T, k kino, method, path, key, contentType string, body io.Reader) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, k.URL+path, body)
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
	}
	return out
}

// things makes an account's collection, video, webhook and returns their ids.
func things(t *testing.T, k kino, key, name string) (video, webhook string) {
	t.Helper()
	call(t, k, "POST", "/v1/collections", key, "application/json", strings.NewReader(`{"slug":"main","name":"Main of `+name+`"}`))
	clip := ffmpegtest.Clip(t, t.TempDir(), "c.mp4", 160, 90, 1, false)
	data, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("collection", "main")
	fw, _ := mw.CreateFormFile("file", name+"-<img src=x onerror=alert(1)>.mp4")
	_, _ = fw.Write(data)
	_ = mw.Close()
	up := call(t, k, "POST", "/v1/videos", key, mw.FormDataContentType(), &buf)
	video = up["video"].(map[string]any)["id"].(string)
	hook := call(t, k, "POST", "/v1/webhooks", key, "application/json", strings.NewReader(`{"url":"https://example.com/`+name+`","events":["video.completed"]}`))
	k.Settle()
	return video, hook["id"].(string)
}

func keyIDs(t *testing.T, c *http.Client, k kino) []string {
	t.Helper()
	resp, err := c.Get(k.URL + "/v1/keys")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/keys: %d %v", resp.StatusCode, err)
	}
	ids := make([]string, len(out.Data))
	for i, d := range out.Data {
		ids[i] = d.ID
	}
	return ids
}

// TestPagesOfOneAccount: each user sees its own account's pages, another
// account's video, key and webhook pages are 404 pages (HTTP 404), /admin
// is for operators only, and operators have no account pages.
func TestPagesOfOneAccount(t *testing.T) {
	k := startKino(t, httpapitest.Options{})
	keyA, keyB := k.Account("acme", domain.PlanPro), k.Account("beta", domain.PlanPro)
	videoA, hookA := things(t, k, keyA, "acme")
	videoB, hookB := things(t, k, keyB, "beta")
	ana, bob, op := login(t, k, "ana@acme.example", "acme"), login(t, k, "bob@beta.example", "beta"), login(t, k, "op@kino.example", "")
	keyOfA, keyOfB := keyIDs(t, ana, k)[0], keyIDs(t, bob, k)[0]

	pages := map[string]string{
		"/":                  "acme-&lt;img src=x onerror=alert(1)&gt;", // its title: the filename without .mp4
		"/?collection=main":  "Main of acme",
		"/?status=PENDING":   "<h1>Videos</h1>",
		"/videos/" + videoA:  "acme-&lt;img src=x onerror=alert(1)&gt;.mp4",
		"/upload":            "Main of acme",
		"/collections":       "Main of acme",
		"/keys":              "/keys/" + keyOfA,
		"/keys/" + keyOfA:    "Revoke key",
		"/webhooks":          "https://example.com/acme",
		"/webhooks/" + hookA: "Send a test",
		"/usage":             "Plan and usage",
	}
	if !dashboard.AssetsBuilt() { // the page says to run just assets instead (TestWithoutAssets)
		pages["/upload"] = "just assets"
	}
	for p, want := range pages {
		r := get(t, ana, k.URL+p)
		if r.status != 200 || !strings.Contains(r.body, want) {
			t.Errorf("ana GET %s: %d, want %q in\n%.2000s", p, r.status, want, r.body)
		}
		wantSecurityHeaders(t, p, r.header)
		if strings.Contains(r.body, "beta") {
			t.Errorf("ana GET %s shows beta's things", p)
		}
		if strings.Contains(r.body, "<img src=x") {
			t.Errorf("ana GET %s shows a filename unescaped", p)
		}
	}
	for _, p := range []string{"/videos/" + videoB, "/keys/" + keyOfB, "/webhooks/" + hookB, "/videos/nope", "/webhooks/nope",
		"/admin", "/admin/accounts/acme"} {
		r := get(t, ana, k.URL+p)
		if r.status != 404 || !strings.Contains(r.body, "Not found") || strings.Contains(r.body, "beta") {
			t.Errorf("ana GET %s: %d, want a 404 page", p, r.status)
		}
		wantSecurityHeaders(t, p, r.header)
	}
	// Logged in, /login goes on.
	if r := get(t, ana, k.URL+"/login?next=/keys"); r.status != 303 || r.header.Get("Location") != "/keys" {
		t.Errorf("logged-in /login: %d %q", r.status, r.header.Get("Location"))
	}
	if r := get(t, ana, k.URL+"/login?next=//evil.example"); r.status != 303 || r.header.Get("Location") != "/" {
		t.Errorf("logged-in /login?next=//evil: %d %q", r.status, r.header.Get("Location"))
	}

	// The operator: /admin and any account's page, no account pages.
	for p, want := range map[string]string{"/admin": "/admin/accounts/beta", "/admin/accounts/beta": "Account <code>beta</code>"} {
		r := get(t, op, k.URL+p)
		if r.status != 200 || !strings.Contains(r.body, want) {
			t.Errorf("op GET %s: %d, want %q in\n%.3000s", p, r.status, want, r.body)
		}
	}
	if r := get(t, op, k.URL+"/"); r.status != 303 || r.header.Get("Location") != "/admin" {
		t.Errorf("op GET /: %d %q", r.status, r.header.Get("Location"))
	}
	for _, p := range []string{"/keys", "/videos/" + videoA, "/admin/accounts/nope"} {
		if r := get(t, op, k.URL+p); r.status != 404 {
			t.Errorf("op GET %s: %d, want 404", p, r.status)
		}
	}
}
