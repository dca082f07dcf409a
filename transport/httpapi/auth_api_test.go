package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/httpapi"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	a.Account("acme", domain.PlanPro) // and its first key, unused: the test revokes one whose id it knows
	key, keyID := a.issueKey(t, "acme", "test")
	wantStatus(t, a.Do("GET", "/v1/videos", key, nil), 200)

	missing := a.Do("GET", "/v1/videos", "", nil)
	wantError(t, missing, 401, "Missing API key")
	if !strings.Contains(missing.JSON(t)["message"].(string), "Authorization") || !strings.Contains(missing.JSON(t)["message"].(string), "Bearer") {
		t.Fatalf("missing-key message: %s", missing.Body)
	}
	if missing.Header.Get("X-RateLimit-Limit") != "" {
		t.Fatal("unauthenticated response carries rate-limit headers")
	}
	for name, header := range map[string]string{
		"basic scheme": "Basic " + key,
		"no scheme":    key,
		"empty bearer": "Bearer ",
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", a.URL+"/v1/videos", nil)
			req.Header.Set("Authorization", header)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
	invalid := a.Do("GET", "/v1/videos", "svc_live_"+strings.Repeat("x", 32), nil)
	wantError(t, invalid, 401, "Invalid API key")
	if invalid.JSON(t)["message"] != "The API key is invalid or has been revoked" {
		t.Fatalf("invalid-key message: %s", invalid.Body)
	}
	wantError(t, a.Do("GET", "/v1/videos", "svc_test_abc", nil), 401, "Invalid API key")

	// Rotation: a second key works; the revoked one is invalid at once.
	second, _ := a.issueKey(t, "acme", "rotated")
	wantStatus(t, a.Do("GET", "/v1/videos", second, nil), 200)
	a.execAccount(t, "acme", domain.RevokeKey{KeyID: keyID})
	wantError(t, a.Do("GET", "/v1/videos", key, nil), 401, "Invalid API key")
	wantStatus(t, a.Do("GET", "/v1/videos", second, nil), 200)
	// Keys are stored hashed: the key itself is in no stored event.
	if n := a.events(t, "", key); n != 0 {
		t.Fatalf("the key appears in %d stored events", n)
	}
}

// rawHeaders returns the response head as sent on the wire.
func rawHeaders(t *testing.T, rawURL, key string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", u.Path, u.Host, key)
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(b), "\r\n\r\n")
	return head
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	clk := eventstoretest.NewClock(time.Date(2026, 11, 22, 12, 0, 10, 0, time.UTC))
	a := startAPI(t, func(c *httpapi.Config) { c.Now = clk.Now })
	key := a.Account("free", domain.PlanFree)
	second, _ := a.issueKey(t, "free", "second") // all keys share the account's budget
	clk.Set(time.Date(2026, 11, 22, 12, 0, 15, 0, time.UTC))
	// A sliding window: Reset is when the oldest counted request leaves
	// it, one minute after it was made.
	reset := strconv.FormatInt(time.Date(2026, 11, 22, 12, 1, 15, 0, time.UTC).Unix(), 10)
	for i := 1; i <= 60; i++ {
		k := key
		if i%2 == 0 {
			k = second
		}
		r := a.Do("GET", "/v1/videos", k, nil)
		wantStatus(t, r, 200)
		if r.Header.Get("X-RateLimit-Limit") != "60" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(60-i) || r.Header.Get("X-RateLimit-Reset") != reset {
			t.Fatalf("request %d headers: limit %q remaining %q reset %q", i, r.Header.Get("X-RateLimit-Limit"),
				r.Header.Get("X-RateLimit-Remaining"), r.Header.Get("X-RateLimit-Reset"))
		}
	}
	r := a.Do("GET", "/v1/videos", key, nil)
	wantError(t, r, 429, "Rate limit exceeded")
	if r.Header.Get("Retry-After") != "60" || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Limit") != "60" {
		t.Fatalf("429 headers: %v", r.Header)
	}
	if !strings.Contains(r.JSON(t)["message"].(string), "retry after") {
		t.Fatalf("429 message: %s", r.Body)
	}
	// Headers are spelled as the spec spells them.
	raw := rawHeaders(t, a.URL+"/v1/videos", key)
	if !strings.Contains(raw, "X-RateLimit-Limit: 60") {
		t.Fatalf("raw headers:\n%s", raw)
	}
	// Another account is not affected. A minute boundary frees nothing:
	// the window slides, so the requests of 12:00:15 count until 12:01:15.
	other := a.Account("other", domain.PlanBusiness)
	if r := a.Do("GET", "/v1/videos", other, nil); r.Status != 200 || r.Header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("other account: %d %v", r.Status, r.Header)
	}
	clk.Set(time.Date(2026, 11, 22, 12, 1, 0, 0, time.UTC))
	r = a.Do("GET", "/v1/videos", key, nil)
	wantError(t, r, 429, "Rate limit exceeded")
	if r.Header.Get("Retry-After") != "15" {
		t.Fatalf("429 after the minute boundary: %v", r.Header)
	}
	clk.Set(time.Date(2026, 11, 22, 12, 1, 15, 0, time.UTC))
	if r := a.Do("GET", "/v1/videos", key, nil); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining") != "59" {
		t.Fatalf("a minute later: %d %v", r.Status, r.Header)
	}
}

func TestAccountsAreIsolated(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	alpha := a.Account("alpha", domain.PlanPro)
	beta := a.Account("beta", domain.PlanPro)
	wantStatus(t, a.Do("POST", "/v1/collections", alpha, map[string]string{"slug": "main", "name": "A main"}), 201)
	up := a.Upload(alpha, "main", "a.mp4", clip(t))
	wantStatus(t, up, 202)
	vid := up.JSON(t)["video"].(map[string]any)["id"].(string)
	wh := a.Do("POST", "/v1/webhooks", alpha, map[string]any{"url": "https://a.example/hook", "events": []string{"video.completed"}})
	wantStatus(t, wh, 201)
	hookID := wh.JSON(t)["id"].(string)

	for _, path := range []string{"/v1/videos/" + vid, "/v1/collections/main", "/v1/webhooks/" + hookID} {
		wantError(t, a.Do("GET", path, beta, nil), 404, "Not found")
		wantError(t, a.Do("DELETE", path, beta, nil), 404, "Not found")
	}
	wantError(t, a.Do("PATCH", "/v1/collections/main", beta, map[string]string{"name": "x"}), 404, "Not found")
	for _, path := range []string{"/v1/videos", "/v1/collections", "/v1/webhooks"} {
		r := a.Do("GET", path, beta, nil)
		wantStatus(t, r, 200)
		if bytes.Contains(r.Body, []byte(vid)) || bytes.Contains(r.Body, []byte(hookID)) || bytes.Contains(r.Body, []byte("A main")) {
			t.Fatalf("%s leaks account alpha's data: %s", path, r.Body)
		}
	}
	// B may use the same slug; A's stays intact.
	wantStatus(t, a.Do("POST", "/v1/collections", beta, map[string]string{"slug": "main", "name": "B main"}), 201)
	wantStatus(t, a.Do("GET", "/v1/videos/"+vid, alpha, nil), 200)
	if a.Do("GET", "/v1/collections/main", alpha, nil).JSON(t)["name"] != "A main" {
		t.Fatal("account alpha's collection changed")
	}
}
