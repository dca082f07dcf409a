package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// 200 concurrent requests of one free account across a minute boundary
// (100 at 12:00:59.5, 100 at 12:01:00.5): never more than the plan's 60
// pass. The fixed window let 120 through. (The account's first request,
// creating its collection at 12:00:10, has left the window by then.)
func TestRateLimitAcrossWindowBoundary(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	urls := []string{a.srv.URL}
	ok1, limited1 := a.burst(time.Date(2026, 11, 22, 12, 1, 59, 500e6, time.UTC), key, urls)
	ok2, limited2 := a.burst(time.Date(2026, 11, 22, 12, 2, 0, 500e6, time.UTC), key, urls)
	if ok, limited := ok1+ok2, limited1+limited2; ok != 60 || limited != 140 {
		t.Fatalf("%d allowed, %d limited across the boundary; want 60 and 140", ok, limited)
	}
	// A minute after the first burst the budget is back.
	a.clock.Set(time.Date(2026, 11, 22, 12, 2, 59, 500e6, time.UTC))
	r := a.do("GET", "/v1/videos", key, "")
	if r.status != 200 || r.header.Get("X-RateLimit-Limit") != "60" || r.header.Get("X-RateLimit-Remaining") != "59" {
		t.Fatalf("a minute later: %d %v", r.status, r.header)
	}
	if reset := r.header.Get("X-RateLimit-Reset"); reset != strconv.FormatInt(time.Date(2026, 11, 22, 12, 3, 59, 500e6, time.UTC).Unix()+1, 10) {
		t.Fatalf("X-RateLimit-Reset %s", reset)
	}
}

// burst sends 100 requests of key (GET /v1/videos) at once at time at on
// the API's clock, spread over the nodes at urls in turn, and counts those
// allowed and those limited (whose headers it checks).
func (a *testAPI) burst(at time.Time, key string, urls []string) (ok, limited int64) {
	a.t.Helper()
	t := a.t
	var oks, limits atomic.Int64
	a.clock.Set(at)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("GET", urls[i%len(urls)]+"/v1/videos", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case 200:
				oks.Add(1)
			case 429:
				limits.Add(1)
				if resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-RateLimit-Remaining") != "0" {
					t.Errorf("429 headers: %v", resp.Header)
				}
			default:
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	close(start)
	wg.Wait()
	return oks.Load(), limits.Load()
}

// Requests without a valid key count against their client address: past
// the budget they get 429 with Retry-After, before any key is looked at
// (a right guess then is refused too). X-Forwarded-For counts only from a
// trusted proxy.
func TestRequestsWithoutAValidKeyAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Limits.AuthFailuresPerMinute = 5 })
	key := a.account("acme", domain.PlanPro)
	bad := domain.KeyPrefix + "0000000000000000000000000000000x"
	for i := 0; i < 3; i++ {
		wantError(t, a.do("GET", "/v1/videos", bad, ""), 401, "Invalid API key")
	}
	wantError(t, a.do("GET", "/v1/videos", "", ""), 401, "Missing API key")
	// A valid key does not use the address's budget.
	if r := a.do("GET", "/v1/videos", key, ""); r.status != 200 {
		t.Fatal(r.status)
	}
	wantError(t, a.do("GET", "/v1/collections", "", ""), 401, "Missing API key")
	r := a.do("GET", "/v1/videos", bad, "")
	m := wantError(t, r, 429, "Rate limit exceeded")
	if r.header.Get("Retry-After") != "60" || r.header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("429 headers: %v", r.header)
	}
	if msg := m["message"].(string); msg != "Too many requests without a valid API key from your address; retry after 60 seconds" {
		t.Fatalf("message %q", msg)
	}
	wantError(t, a.do("GET", "/v1/videos", key, ""), 429, "Rate limit exceeded")
	// A forged X-Forwarded-For from an untrusted peer changes nothing.
	req, _ := http.NewRequest("GET", a.srv.URL+"/v1/videos", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	wantError(t, a.request(req, bad), 429, "Rate limit exceeded")
	// The budget slides back.
	a.clock.Set(a.clock.Now().Add(time.Minute))
	wantError(t, a.do("GET", "/v1/videos", bad, ""), 401, "Invalid API key")
	if r := a.do("GET", "/v1/videos", key, ""); r.status != 200 {
		t.Fatal(r.status)
	}

	// Behind a trusted proxy, each forwarded client has its own budget.
	p := newTestAPI(t, func(c *Config) {
		c.Limits.AuthFailuresPerMinute = 2
		c.Limits.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	from := func(client string) response {
		req, _ := http.NewRequest("GET", p.srv.URL+"/v1/videos", nil)
		req.Header.Set("X-Forwarded-For", "198.51.100.1, "+client)
		return p.request(req, bad)
	}
	wantError(t, from("192.0.2.1"), 401, "Invalid API key")
	wantError(t, from("192.0.2.1"), 401, "Invalid API key")
	wantError(t, from("192.0.2.1"), 429, "Rate limit exceeded")
	wantError(t, from("192.0.2.2"), 401, "Invalid API key")
}

// Wrong admin tokens count against the address like wrong API keys.
func TestAdminTokenGuessesAreLimited(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) {
		c.Limits.AuthFailuresPerMinute = 2
		c.Admin.Token = "0123456789abcdef0123456789abcdef"
		c.Admin.Replayer = replayFunc(func() (any, error) { return map[string]bool{"ok": true}, nil })
	})
	wantError(t, a.do("POST", "/v1/admin/replay", "wrong-token", ""), 401, "Invalid API key")
	wantError(t, a.do("POST", "/v1/admin/replay", "", ""), 401, "Missing API key")
	wantError(t, a.do("POST", "/v1/admin/replay", "0123456789abcdef0123456789abcdef", ""), 429, "Rate limit exceeded")
	a.clock.Set(a.clock.Now().Add(time.Minute))
	if r := a.do("POST", "/v1/admin/replay", "0123456789abcdef0123456789abcdef", ""); r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestAdminTokenMinimumLength(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	cfg := a.s.cfg
	cfg.Admin.Token = "short-token"
	if _, err := New(cfg); err == nil {
		t.Fatal("a 11-character admin token was accepted")
	}
	cfg.Admin.Token = strings.Repeat("é", 12) // 24 bytes, 12 characters
	if _, err := New(cfg); err == nil {
		t.Fatal("a 12-character admin token of 24 bytes was accepted")
	}
	cfg.Admin.Token = "exactly-24-characters-ok"
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{name: "peer", remote: "192.0.2.7:5555", want: "192.0.2.7"},
		{name: "xff ignored without trusted proxies", remote: "192.0.2.7:5555", xff: []string{"203.0.113.1"}, want: "192.0.2.7"},
		{name: "xff ignored from an untrusted peer", remote: "192.0.2.7:5555", xff: []string{"203.0.113.1"}, trusted: trusted, want: "192.0.2.7"},
		{name: "trusted proxy", remote: "10.1.2.3:80", xff: []string{"203.0.113.1"}, trusted: trusted, want: "203.0.113.1"},
		{name: "rightmost untrusted hop", remote: "10.1.2.3:80", xff: []string{"198.51.100.9, 203.0.113.1, 10.9.9.9"}, trusted: trusted, want: "203.0.113.1"},
		{name: "several headers", remote: "10.1.2.3:80", xff: []string{"198.51.100.9", "203.0.113.1"}, trusted: trusted, want: "203.0.113.1"},
		{name: "garbage stops at the last trusted hop", remote: "10.1.2.3:80", xff: []string{"nonsense"}, trusted: trusted, want: "10.1.2.3"},
		{name: "ipv6 counts by /64", remote: "[2001:db8:1:2:3:4:5:6]:443", want: "2001:db8:1:2::/64"},
		{name: "ipv4-mapped", remote: "[::ffff:192.0.2.7]:1", want: "192.0.2.7"},
		{name: "ipv6 trusted proxy", remote: "[::1]:1", xff: []string{"192.0.2.8"}, trusted: trusted, want: "192.0.2.8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddr(r, tc.trusted); got != tc.want {
				t.Fatalf("clientAddr = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.1,::1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8, proxy.example"); err == nil {
		t.Fatal("a host name was accepted")
	}
}
