package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/dashboard"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
	"github.com/kino-video/kino/transport/httpapi/player"
)

// kino is kino's API on real dependencies, with its user service and
// the dashboard's pages registered after its routes, as kino serve does.
type kino struct {
	*httpapitest.Kino
	users *accounts.Users
}

func startKino(t *testing.T, o httpapitest.Options) kino {
	t.Helper()
	var users *accounts.Users
	configure := o.Configure
	o.Configure = func(c *httpapi.Config) {
		// Cheap hashes: the tests log in often on two shared cores.
		sessions, err := kv.OpenSessions(context.Background(), c.Store.(*eventstore.Store), accounts.DefaultSessionTTL)
		if err != nil {
			t.Fatal(err)
		}
		u, err := accounts.NewUsers(c.Store, sessions, accounts.UsersConfig{Argon2: accounts.Argon2Params{Time: 1, Memory: 8 << 10, Threads: 1}})
		if err != nil {
			t.Fatal(err)
		}
		c.Users, users = u, u
		if configure != nil {
			configure(c)
		}
	}
	k := httpapitest.Start(t, o)
	d, err := dashboard.New(dashboard.Config{API: k.Server.Router(), CDNURL: k.URL + "/cdn", HLSJS: player.AssetsBuilt()})
	if err != nil {
		t.Fatal(err)
	}
	d.Register(k.Server.Router())
	return kino{k, users}
}

// noFollow is a client that shows redirects instead of following them.
func noFollow(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type page struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, c *http.Client, u string) page {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, resp.Header, string(b)}
}

// wantSecurityHeaders checks the headers every page carries.
func wantSecurityHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: CSP allows inline or eval: %q", what, csp)
	}
	for name, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
		"X-Frame-Options": "DENY", "Cache-Control": "no-store"} {
		if got := h.Get(name); got != want {
			t.Errorf("%s: %s = %q, want %q", what, name, got, want)
		}
	}
}

// pagePaths are the dashboard's pages that need a login.
var pagePaths = []string{"/", "/?collection=main&status=COMPLETED", "/videos/01JAAAAAAAAAAAAAAAAAAAAAAA", "/upload", "/collections",
	"/keys", "/keys/x", "/webhooks", "/webhooks/x", "/usage", "/admin", "/admin/accounts/acme"}

// TestLoggedOutRedirects: every page sends a visitor without a session to
// /login?next=<the page>, with the security headers.
func TestLoggedOutRedirects(t *testing.T) {
	k := startKino(t, httpapitest.Options{})
	c := noFollow(nil)
	for _, p := range pagePaths {
		r := get(t, c, k.URL+p)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next="+url.QueryEscape(p) {
			t.Errorf("GET %s logged out: %d Location %q", p, r.status, r.header.Get("Location"))
		}
		wantSecurityHeaders(t, p, r.header)
	}
	for _, p := range []string{"/login", "/login?next=/keys", "/password?token=abc"} {
		r := get(t, c, k.URL+p)
		if r.status != 200 || !strings.Contains(r.body, "<form") {
			t.Errorf("GET %s: %d", p, r.status)
		}
		wantSecurityHeaders(t, p, r.header)
		if strings.Contains(r.body, "<script>") || strings.Contains(r.body, " style=") {
			t.Errorf("%s has an inline script or style", p)
		}
	}
}

// TestLoginNextIsLocal: the page after login is a path on this site, never
// another origin (no open redirect).
func TestLoginNextIsLocal(t *testing.T) {
	k := startKino(t, httpapitest.Options{})
	c := noFollow(nil)
	for next, want := range map[string]string{
		"/keys":                    `data-redirect="/keys"`,
		"/videos/x?y=1":            `data-redirect="/videos/x?y=1"`,
		"//evil.example/":          "",
		"https://evil.example/":    "",
		"/\\evil.example":          "",
		"javascript:alert(1)":      "",
		"\\/evil.example":          "",
		"/%0d%0aSet-Cookie:x=1":    `data-redirect="/%0d%0aSet-Cookie:x=1"`,
		"http:evil.example":        "",
		"/\t/evil.example":         "",
		" //evil.example":          "",
		"https:\\\\evil.example\\": "",
	} {
		r := get(t, c, k.URL+"/login?next="+url.QueryEscape(next))
		if r.status != 200 {
			t.Fatalf("login?next=%q: %d", next, r.status)
		}
		got := ""
		if _, rest, ok := strings.Cut(r.body, `data-redirect="`); ok {
			v, _, _ := strings.Cut(rest, `"`)
			got = `data-redirect="` + v + `"`
		}
		if got != want {
			t.Errorf("login?next=%q: redirect attribute %q, want %q", next, got, want)
		}
	}
}

// TestAPIRoutesStayTheAPIs: the pages do not shadow the API's routes.
func TestAPIRoutesStayTheAPIs(t *testing.T) {
	k := startKino(t, httpapitest.Options{})
	c := noFollow(nil)
	for p, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/v1/videos": 401, "/v1/openapi.json": 200,
		"/assets/play.js": 200, "/cdn/x/y": 404, "/play/01JAAAAAAAAAAAAAAAAAAAAAAA": 404} {
		r := get(t, c, k.URL+p)
		if r.status != want {
			t.Errorf("GET %s: %d, want %d", p, r.status, want)
		}
		if strings.HasPrefix(p, "/play/") {
			// The player's pages answer people: HTML, as the API serves them.
			if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "Video not found") {
				t.Errorf("GET %s: %s, not the player's own 404 page", p, r.header.Get("Content-Type"))
			}
			continue
		}
		if r.status == 404 || r.status == 401 {
			if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				t.Errorf("GET %s: %s, not the API's JSON error", p, r.header.Get("Content-Type"))
			}
		}
	}
}

// TestStaticAssets: the dashboard's files are served by name, typed,
// nothing else.
func TestStaticAssets(t *testing.T) {
	k := startKino(t, httpapitest.Options{})
	c := noFollow(nil)
	for p, want := range map[string]string{"/static/app.js": "text/javascript; charset=utf-8", "/static/app.css": "text/css; charset=utf-8",
		"/static/logo.svg": "image/svg+xml"} {
		r := get(t, c, k.URL+p)
		if r.status != 200 || r.header.Get("Content-Type") != want || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d %q", p, r.status, r.header.Get("Content-Type"))
		}
	}
	for _, p := range []string{"/static/nope.js", "/static/..%2fdashboard.go", "/static/", "/static/web", "/static/..%2f..%2fgo.mod"} {
		if r := get(t, c, k.URL+p); r.status != 404 {
			t.Errorf("GET %s: %d, want 404", p, r.status)
		}
	}
	if dashboard.AssetsBuilt() {
		if r := get(t, c, k.URL+"/static/tus.min.js"); r.status != 200 {
			t.Errorf("tus.min.js: %d", r.status)
		}
	}
}

// TestUnknownPages: a browser gets a 404 page for a path that is no page;
// the API's paths, and clients that do not ask for HTML, get the API's
// JSON 404.
func TestUnknownPages(t *testing.T) {
	k := startKino(t, httpapitest.Options{})
	for _, c := range []struct {
		path, accept string
		html         bool
	}{
		{"/nope", "text/html,application/xhtml+xml", true},
		{"/videos/x/y", "text/html", true},
		{"/nope", "", false},
		{"/nope", "application/json", false},
		{"/v1/nope", "text/html", false},
		{"/cdn/nope", "text/html", false},
		{"/auth/nope", "text/html", false},
	} {
		req, _ := http.NewRequest("GET", k.URL+c.path, nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != 404 || strings.HasPrefix(ct, "text/html") != c.html {
			t.Errorf("GET %s (Accept %q): %d %s", c.path, c.accept, resp.StatusCode, ct)
		}
		if c.html {
			wantSecurityHeaders(t, c.path, resp.Header)
			if !strings.Contains(string(b), "Not found") {
				t.Errorf("GET %s: not a not-found page", c.path)
			}
		}
	}
}
