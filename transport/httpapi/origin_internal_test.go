package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

func TestCleanHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"192.168.1.5:8080", "192.168.1.5:8080", true},
		{"Video.Example.com", "video.example.com", true},
		{"localhost:1", "localhost:1", true},
		{"[::1]:8080", "[::1]:8080", true},
		{"[FE80::1]", "[fe80::1]", true},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", true},
		{"", "", false},
		{"evil host", "", false},
		{`evil"host`, "", false},
		{"evil'host", "", false},
		{"user@evil.example", "", false},
		{"evil.example/path", "", false},
		{"evil.example:80/x", "", false},
		{"evil.example;script-src *", "", false},
		{"evil.example:0", "", false},
		{"evil.example:65536", "", false},
		{"evil.example:", "", false},
		{"evil.example:+80", "", false},
		{"evil.example:8080:1", "", false},
		{"-evil.example", "", false},
		{"évil.example", "", false},
		{"[::1", "", false},
		{"[fe80::1%25eth0]", "", false},
		{"[1.2.3.4]", "", false},
		{"a..b", "", false},
		{strings.Repeat("a", 64) + ".example", "", false},
		{strings.Repeat("a.", 200) + "example", "", false},
		{"1.2.3.4.5", "1.2.3.4.5", true}, // a (numeric) name, harmless
		{"<script>", "", false},
		{"\x00", "", false},
	} {
		got, ok := cleanHost(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("cleanHost(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// Without --cdn-url, media URLs name the origin the request reached (a
// phone on the LAN gets the LAN address), https when a trusted proxy says
// so; a Host header that is not a plain host[:port] is never reflected;
// an explicit --cdn-url always wins.
func TestMediaURLsFollowTheRequestsHost(t *testing.T) {
	t.Parallel()
	proxy := netip.MustParsePrefix("10.0.0.0/8")
	a := newTestAPI(t, func(c *Config) {
		c.Origin.CDNURL, c.Origin.Local = "", "http://192.168.1.5:8080"
		c.Limits.TrustedProxies = []netip.Prefix{proxy}
	})
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	get := func(s *Server, path, host, remote string, h http.Header) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest("GET", path, nil)
		req.Host, req.RemoteAddr = host, remote
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	playlist := func(s *Server, host, remote string, h http.Header) string {
		t.Helper()
		rec := get(s, "/v1/videos/"+id, host, remote, h)
		var v wire.Video
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || rec.Code != 200 || v.PlaylistURL == nil {
			t.Fatalf("get video (Host %q): %d %s", host, rec.Code, rec.Body)
		}
		// The list answer renders the same way.
		rec = get(s, "/v1/videos", host, remote, h)
		if !strings.Contains(rec.Body.String(), `"playlistUrl":"`+*v.PlaylistURL+`"`) {
			t.Fatalf("list (Host %q) does not name %s: %s", host, *v.PlaylistURL, rec.Body)
		}
		return *v.PlaylistURL
	}
	tail := "/cdn/" + id + "/hls/master.m3u8"
	xfp := http.Header{"X-Forwarded-Proto": {"https"}}
	for _, tc := range []struct {
		name, host, remote string
		h                  http.Header
		want               string
	}{
		{"LAN address", "192.168.1.5:8080", "192.168.1.20:5555", nil, "http://192.168.1.5:8080"},
		{"a name, lower-cased", "Kino.Example.com", "192.168.1.20:5555", nil, "http://kino.example.com"},
		{"https from a trusted proxy", "kino.example.com", "10.1.2.3:5555", xfp, "https://kino.example.com"},
		{"X-Forwarded-Proto from anyone else", "kino.example.com", "192.168.1.20:5555", xfp, "http://kino.example.com"},
		{"spaces", "evil host", "192.168.1.20:5555", nil, "http://192.168.1.5:8080"},
		{"quotes", `evil.example"><script>`, "192.168.1.20:5555", nil, "http://192.168.1.5:8080"},
		{"userinfo", "user@evil.example", "192.168.1.20:5555", nil, "http://192.168.1.5:8080"},
		{"a path", "evil.example/x", "192.168.1.20:5555", nil, "http://192.168.1.5:8080"},
		{"very long", strings.Repeat("a", 5000) + ".example", "192.168.1.20:5555", nil, "http://192.168.1.5:8080"},
		{"empty", "", "192.168.1.20:5555", nil, "http://192.168.1.5:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := playlist(a.s, tc.host, tc.remote, tc.h); got != tc.want+tail {
				t.Fatalf("playlistUrl %q, want %q", got, tc.want+tail)
			}
		})
	}

	t.Run("the play page's CSP names no request value", func(t *testing.T) {
		for _, host := range []string{"192.168.1.5:8080", "evil.example;script-src *"} {
			rec := get(a.s, "/play/"+id, host, "192.168.1.20:5555", nil)
			csp := rec.Header().Get("Content-Security-Policy")
			if rec.Code != 200 || !strings.Contains(csp, "media-src 'self' blob:") || strings.Contains(csp, "evil") || strings.Contains(csp, "192.168") {
				t.Fatalf("play (Host %q): %d CSP %q", host, rec.Code, csp)
			}
			if body := rec.Body.String(); strings.Contains(body, "evil") {
				t.Fatalf("play page reflects the Host: %s", body)
			}
		}
	})

	t.Run("--base-url's site, without --cdn-url", func(t *testing.T) {
		c := newTestAPI(t, func(c *Config) { c.Origin.CDNURL, c.Origin.PublicURL = "", "https://kino.example.com/" })
		key3 := c.account("acme", domain.PlanPro)
		id3 := c.completedVideo(key3)
		key, id = key3, id3
		for _, host := range []string{"192.168.1.5:8080", "evil host"} {
			if got := playlist(c.s, host, "192.168.1.20:5555", nil); got != "https://kino.example.com/cdn/"+id3+"/hls/master.m3u8" {
				t.Fatalf("Host %q: playlistUrl %q", host, got)
			}
		}
		rec := get(c.s, "/play/"+id3, "192.168.1.5:8080", "192.168.1.20:5555", nil)
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "media-src 'self' https://kino.example.com blob:") {
			t.Fatalf("play CSP with --base-url: %q", csp)
		}
	})

	t.Run("an explicit --cdn-url wins", func(t *testing.T) {
		b := newTestAPI(t) // CDNURL http://cdn.example.test:8443/cdn
		key2 := b.account("acme", domain.PlanPro)
		id2 := b.completedVideo(key2)
		key, id = key2, id2
		for _, host := range []string{"192.168.1.5:8080", "evil host"} {
			if got := playlist(b.s, host, "10.1.2.3:5555", xfp); got != "http://cdn.example.test:8443/cdn/"+id2+"/hls/master.m3u8" {
				t.Fatalf("Host %q: playlistUrl %q", host, got)
			}
		}
		rec := get(b.s, "/play/"+id2, "192.168.1.5:8080", "192.168.1.20:5555", nil)
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "media-src 'self' http://cdn.example.test:8443 blob:") {
			t.Fatalf("play CSP with --cdn-url: %q", csp)
		}
	})
}
