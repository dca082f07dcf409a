package apiclient_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// The client's Video encodes to the very bytes the API answered, so a
// program that passes videos on (kino upload --json) changes nothing.
func TestVideoJSONIsTheAPIs(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	id := upload(t, c, "a.mp4", notAVideo(3000))
	req, _ := http.NewRequest("GET", k.BaseURL+"/videos/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v apiclient.Video
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(v)
	if err != nil || !bytes.Equal(again, bytes.TrimSpace(raw)) {
		t.Fatalf("encoded\n%s\nthe API\n%s", again, raw)
	}
}

// The key goes only to BaseURL's origin, and never into an error.
func TestKeyStaysOutOfErrorsAndOtherOrigins(t *testing.T) {
	t.Parallel()
	k := httpapitest.Start(t, httpapitest.Options{})
	const key = "svc_live_0123456789abcdefghijklmnopqrstuv"
	c := &apiclient.Client{BaseURL: k.BaseURL, Key: key, UserAgent: "shop/2"}
	_, err := c.Collections(ctx(t))
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Label != "Invalid API key" || !errors.Is(err, apiclient.ErrUnauthorized) {
		t.Fatalf("bad key: %v", err)
	}
	if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[9:]) {
		t.Fatalf("the key is in %q", err)
	}

	// A server that is not there: a TransportError, without the key.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	gone := &apiclient.Client{BaseURL: dead.URL + "/v1", Key: key}
	_, err = gone.Video(ctx(t), "01ARZ3NDEKTSV4RRFFQ69G5FAV")
	var te *apiclient.TransportError
	if !errors.As(err, &te) || strings.Contains(err.Error(), key) || te.Path != "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV" {
		t.Fatalf("dead server: %v", err)
	}

	// What a server sees: the User-Agent, and the key only on its origin.
	var elsewhere []http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere = append(elsewhere, r.Header.Clone())
		w.Header().Set("Upload-Offset", "0")
		w.Header().Set("Upload-Length", "10")
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	var seen []http.Header
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Clone())
		if strings.Contains(r.URL.Path, "/direct/") {
			w.Header().Set("Location", r.URL.Path+"/VID") // a path, as kino without --base-url answers
		} else {
			w.Header().Set("Location", other.URL+"/v1/uploads/tus/X") // another origin (port)
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer rec.Close()
	c = &apiclient.Client{BaseURL: rec.URL + "/v1", Key: key, UserAgent: "shop/2"}
	u, err := c.CreateResumable(ctx(t), 10, "a.mp4", "main")
	if err != nil || u.URL != other.URL+"/v1/uploads/tus/X" || u.VideoID() != "X" {
		t.Fatalf("create: %+v %v", u, err)
	}
	h := seen[0]
	if h.Get("Authorization") != "Bearer "+key || h.Get("User-Agent") != "shop/2 kino-go/"+apiclient.Version ||
		h.Get("Tus-Resumable") != "1.0.0" || h.Get("Upload-Length") != "10" ||
		h.Get("Upload-Metadata") != "filename YS5tcDQ=,collection bWFpbg==" {
		t.Fatalf("creation headers: %v", h)
	}
	// The upload lives on another origin: the key is not sent there.
	if off, err := u.Offset(ctx(t)); err != nil || off != 0 {
		t.Fatalf("offset: %d %v", off, err)
	}
	if len(elsewhere) != 1 || elsewhere[0].Get("Authorization") != "" || elsewhere[0].Get("Tus-Resumable") != "1.0.0" {
		t.Fatalf("the other origin got %v", elsewhere)
	}
	// A direct upload URL is used without the key, and its token stays out of errors.
	direct := rec.URL + "/v1/uploads/tus/direct/secrettoken"
	du, err := c.CreateResumableAt(ctx(t), direct, 10, "a.mp4")
	if err != nil || du.URL != direct+"/VID" || du.VideoID() != "VID" {
		t.Fatalf("direct: %+v %v", du, err)
	}
	if h := seen[len(seen)-1]; h.Get("Authorization") != "" || h.Get("Upload-Metadata") != "filename YS5tcDQ=" {
		t.Fatalf("direct creation headers: %v", h)
	}
	rec.Close()
	if _, err := c.CreateResumableAt(ctx(t), direct, 10, "a.mp4"); err == nil || strings.Contains(err.Error(), "secrettoken") {
		t.Fatalf("the token is in %v", err)
	}
}

// The examples of docs/webhooks.md verify; anything else does not.
func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	const secret = "whsec_323d47bb14cbfc80dd71efd56fe54244ec60a3da547aea5e0b8953a50d824a90"
	const sig = "9b0e5a7987a4a618a55dba67c49d01b6e5a47e762651b6ad8faa2e49cc3df370"
	body := []byte(`{"id":"01M80HW5JSAJ53PGDMG9D86FGD","type":"video.completed","createdAt":"2026-11-22T02:37:58.745Z","data":{"video":{"id":"01M80HW58ASANTWWED78BX7QF9","filename":"clip.mp4","status":"COMPLETED","duration":1,"originalSize":31220,"processedSize":66742,"playlistUrl":"http://localhost:8080/cdn/01M80HW58ASANTWWED78BX7QF9/hls/master.m3u8","thumbnailUrl":"http://localhost:8080/cdn/01M80HW58ASANTWWED78BX7QF9/thumbnail.jpg","previewUrl":"http://localhost:8080/cdn/01M80HW58ASANTWWED78BX7QF9/preview.mp4","resolutions":["180p"],"errorMessage":null,"collection":{"slug":"default","name":"Default"},"createdAt":"2026-11-22T02:37:58.411Z","updatedAt":"2026-11-22T02:37:58.745Z","progress":1}}}`)
	e, err := apiclient.VerifyWebhook(body, sig, secret)
	if err != nil || e.Type != apiclient.EventVideoCompleted || e.ID != "01M80HW5JSAJ53PGDMG9D86FGD" || e.Video == nil ||
		e.Video.Status != apiclient.StatusCompleted || e.Video.Resolutions[0] != "180p" || e.CreatedAt.UnixMilli() != e.Video.UpdatedAt.UnixMilli() {
		t.Fatalf("docs example: %+v %v", e, err)
	}
	tampered := bytes.Replace(body, []byte(`"duration":1`), []byte(`"duration":2`), 1)
	for name, tc := range map[string]struct {
		body        []byte
		sig, secret string
	}{
		"tampered body": {tampered, sig, secret},
		"other secret":  {body, sig, secret + "0"},
		"no signature":  {body, "", secret},
		"not hex":       {body, strings.Repeat("zz", 32), secret},
		"truncated":     {body, sig[:10], secret},
		"no secret":     {body, sig, ""},
		"re-serialised": {func() []byte {
			var m map[string]any
			_ = json.Unmarshal(body, &m)
			b, _ := json.Marshal(m)
			return b
		}(), sig, secret},
	} {
		if _, err := apiclient.VerifyWebhook(tc.body, tc.sig, tc.secret); !errors.Is(err, apiclient.ErrSignature) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Over HTTP: 204, 401 for a bad signature, 400 for a signed non-JSON body.
	var got []apiclient.WebhookEvent
	srv := httptest.NewServer(apiclient.WebhookHandler(secret, func(_ *http.Request, e apiclient.WebhookEvent) error {
		got = append(got, e)
		return nil
	}))
	defer srv.Close()
	post := func(body []byte, sig string) int {
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(body))
		req.Header.Set(apiclient.HeaderSignature, sig)
		req.Header.Set(apiclient.HeaderDelivery, "dlv_7ebfcd7ed1cd3ba9c5b08de1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(body, sig); s != 204 || len(got) != 1 || got[0].DeliveryID != "dlv_7ebfcd7ed1cd3ba9c5b08de1" || !bytes.Equal(got[0].Raw, body) {
		t.Fatalf("good delivery: %d %+v", s, got)
	}
	if s := post(tampered, sig); s != 401 || len(got) != 1 {
		t.Fatalf("tampered: %d", s)
	}
	notJSON := []byte("not json")
	if s := post(notJSON, sign(secret, notJSON)); s != 400 {
		t.Fatalf("not JSON: %d", s)
	}
}

func TestHTTPDeadlineIsHonoured(t *testing.T) {
	t.Parallel()
	k := httpapitest.Start(t, httpapitest.Options{})
	c := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("acme", domain.PlanPro)}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Collections(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
