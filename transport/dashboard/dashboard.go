// Package dashboard serves kino's pages for people: the account dashboard
// at / and the operator's /admin. Pages are html/template, rendered on the
// server from kino's own JSON API, which the dashboard calls in-process
// with the visitor's session cookie; the pages' scripts write only through
// the same /v1 and /auth endpoints (fetch, same origin, cookie). So the
// browser and an API client meet one set of checks: a page shows what the
// API shows its caller, and answers 404 where the API does.
package dashboard

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/gorilla/mux"
)

// assets are the dashboard's static files, served under /static/.
// app.css and app.js are committed; tus.min.js is copied from npm by
// `just assets` (transport/dashboard/web holds its package.json and lock
// file) and is absent in a clean clone, which still builds: /upload then
// says what to run.
//
//go:embed assets
var assets embed.FS

//go:embed templates
var templateFS embed.FS

// tusJS is tus-js-client's browser bundle.
const tusJS = "tus.min.js"

// tusBuilt is whether tus-js-client was built into this binary.
var tusBuilt = func() bool {
	_, err := fs.Stat(assets, "assets/"+tusJS)
	return err == nil
}()

// AssetsBuilt reports whether the npm assets (tus-js-client) were built
// into this binary (`just assets`).
func AssetsBuilt() bool { return tusBuilt }

// Config wires the dashboard.
type Config struct {
	// API is kino's API (its router): the pages read through its /auth and
	// /v1 JSON endpoints, in-process, with the visitor's cookie.
	API http.Handler
	// CDNURL is the public base of media ({cdn_url}): the pages' CSP lets
	// images and video come from its origin.
	CDNURL string
	// HLSJS is whether /assets/hls.min.js (the API's player asset) exists.
	HLSJS bool
	// CaptionLanguages are the languages kino generates captions in (none:
	// the video page offers no generation).
	CaptionLanguages []string
	Log              *slog.Logger
}

// Dashboard serves the pages.
type Dashboard struct {
	cfg   Config
	csp   string
	pages map[string]*template.Template
}

// New parses the templates.
func New(cfg Config) (*Dashboard, error) {
	if cfg.API == nil {
		return nil, errors.New("dashboard: the API handler is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	csp, err := pageCSP(cfg.CDNURL)
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Dashboard{cfg: cfg, csp: csp, pages: pages}, nil
}

// pageCSP allows scripts, styles and fetches from kino itself only (no
// inline script or style), images and media from the {cdn_url} origin
// too (MSE and hls.js's worker from blob:), and no framing at all.
func pageCSP(cdnURL string) (string, error) {
	cdn := ""
	if cdnURL != "" {
		u, err := url.Parse(cdnURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return "", fmt.Errorf("dashboard: cdn url %q is not an absolute URL", cdnURL)
		}
		cdn = " " + u.Scheme + "://" + u.Host
	}
	return strings.Join([]string{
		"default-src 'self'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self'" + cdn,
		"media-src 'self' blob:" + cdn,
		"connect-src 'self'" + cdn,
		"worker-src 'self' blob:",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'self'",
		"frame-ancestors 'none'",
	}, "; "), nil
}

// Register adds the pages to the API's router. Call it after the API's
// own routes: the pages are exact paths, so /v1, /cdn, /play, /assets,
// /healthz, /readyz and /auth stay the API's.
func (d *Dashboard) Register(r *mux.Router) {
	get := func(p string, h func(w http.ResponseWriter, r *http.Request, me identity) error) {
		r.Handle(p, d.page(h, false)).Methods(http.MethodGet, http.MethodHead)
	}
	admin := func(p string, h func(w http.ResponseWriter, r *http.Request, me identity) error) {
		r.Handle(p, d.page(h, true)).Methods(http.MethodGet, http.MethodHead)
	}
	r.Handle("/login", http.HandlerFunc(d.login)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/password", http.HandlerFunc(d.password)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/static/{name}", http.HandlerFunc(d.serveAsset)).Methods(http.MethodGet, http.MethodHead)
	get("/", d.videos)
	get("/videos/{id}", d.video)
	get("/upload", d.upload)
	get("/collections", d.collections)
	get("/keys", d.keys)
	get("/keys/{id}", d.key)
	get("/signing-keys", d.signingKeys)
	get("/webhooks", d.webhooks)
	get("/webhooks/{id}", d.webhook)
	get("/usage", d.usage)
	admin("/admin", d.admin)
	admin("/admin/accounts/{slug}", d.adminAccount)

	// A browser asking for a page that does not exist gets a page that
	// says so (404); the API's paths and other clients keep the API's
	// JSON 404.
	api404 := r.NotFoundHandler
	if api404 == nil {
		api404 = http.NotFoundHandler()
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !pagePath(req.URL.Path) || (req.Method != http.MethodGet && req.Method != http.MethodHead) ||
			!strings.Contains(req.Header.Get("Accept"), "text/html") {
			api404.ServeHTTP(w, req)
			return
		}
		d.headers(w.Header())
		me, _, _ := d.me(req)
		d.fail(w, req, me, errNotFound)
	})
}

// pagePath tells the dashboard's paths from the API's.
func pagePath(p string) bool {
	for _, api := range []string{"/v1/", "/cdn/", "/auth/", "/play/", "/assets/"} {
		if strings.HasPrefix(p, api) {
			return false
		}
	}
	return p != "/v1" && p != "/healthz" && p != "/readyz"
}

// identity is the visitor, as GET /auth/me answers.
type identity struct {
	ID       string `json:"id"`
	Email    string `json:"email"`
	Account  string `json:"account"`
	Operator bool   `json:"operator"`
}

// apiError is an API answer other than 2xx.
type apiError struct {
	Status  int
	Label   string `json:"error"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Label, e.Message) }

// errNotFound makes a page answer 404.
var errNotFound = &apiError{Status: http.StatusNotFound, Label: "Not Found", Message: "There is nothing here."}

// get calls GET path on the API with the visitor's request (cookie, client
// address) and decodes the JSON answer into out.
func (d *Dashboard) get(r *http.Request, p string, out any) error {
	req := r.Clone(r.Context())
	u, err := url.Parse(p)
	if err != nil {
		return err
	}
	req.Method = http.MethodGet
	req.URL = u
	req.RequestURI = u.RequestURI()
	req.Body, req.ContentLength = http.NoBody, 0
	req.Header = r.Header.Clone()
	req.Header.Del("Authorization") // the session cookie only
	req.Header.Del("Content-Type")
	req.Header.Del("Content-Length")
	rec := &recorder{header: http.Header{}}
	d.cfg.API.ServeHTTP(rec, req)
	if rec.Code == 0 {
		rec.Code = http.StatusOK
	}
	body := rec.Body.Bytes()
	if rec.Code < 200 || rec.Code > 299 {
		e := &apiError{Status: rec.Code}
		if json.Unmarshal(body, e) != nil || e.Message == "" {
			e.Label, e.Message = http.StatusText(rec.Code), "kino answered "+http.StatusText(rec.Code)
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("dashboard: GET %s: %w", u.Path, err)
	}
	return nil
}

// recorder keeps an in-process answer of the API (small JSON bodies).
type recorder struct {
	header http.Header
	Code   int
	Body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.Code == 0 {
		r.Code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.Body.Write(p)
}

// me is the visitor, or false when not logged in.
func (d *Dashboard) me(r *http.Request) (identity, bool, error) {
	var me identity
	err := d.get(r, "/auth/me", &me)
	var ae *apiError
	if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusNotFound) {
		return identity{}, false, nil // 404: a kino without sessions
	}
	return me, err == nil, err
}

// page wraps a page's handler: the security headers, the login redirect,
// the operator-only check, and error pages.
func (d *Dashboard) page(h func(w http.ResponseWriter, r *http.Request, me identity) error, operator bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.headers(w.Header())
		me, ok, err := d.me(r)
		if err != nil {
			d.fail(w, r, identity{}, err)
			return
		}
		if !ok {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		switch {
		case operator && !me.Operator:
			err = errNotFound // an account's user does not learn that /admin exists
		case !operator && me.Account == "" && me.Operator:
			if r.URL.Path == "/" {
				http.Redirect(w, r, "/admin", http.StatusSeeOther)
				return
			}
			err = errNotFound // an operator without an account has no account pages
		default:
			err = h(w, r, me)
		}
		if err != nil {
			d.fail(w, r, me, err)
		}
	})
}

// fail renders an error page: the API's status and message (404 for
// another account's things, as the API answers), 500 for anything else.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, me identity, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		d.cfg.Log.Error("dashboard page failed", "path", r.URL.Path, "err", err)
		ae = &apiError{Status: http.StatusInternalServerError, Label: "Internal Server Error", Message: "Something went wrong on kino's side; the log says what."}
	}
	if ae.Status == http.StatusUnauthorized { // the session ended between two calls
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	title := "Error"
	if ae.Status == http.StatusNotFound {
		title = "Not found"
	}
	d.render(w, r, ae.Status, "error", view{Title: title, Me: me, Data: ae})
}

// headers are the security headers of every page.
func (d *Dashboard) headers(h http.Header) {
	h.Set("Content-Security-Policy", d.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	h.Set("Cache-Control", "no-store")
}

// view is what every page's template gets.
type view struct {
	Title string
	Nav   string // the nav entry to mark current
	Me    identity
	Data  any
	// Assets: whether the npm assets are built in (upload, player).
	TusJS, HLSJS bool
}

func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	t, ok := d.pages[name]
	if !ok {
		panic("dashboard: no page " + name)
	}
	v.TusJS, v.HLSJS = tusBuilt, d.cfg.HLSJS
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		d.cfg.Log.Error("dashboard template failed", "page", name, "err", err)
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// localNext is where to go after logging in: a path on this site only
// ("/x", not "//evil", "/\evil", "https://evil" or "javascript:"),
// otherwise "".
func localNext(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return ""
	}
	return next
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	d.headers(w.Header())
	next := localNext(r.URL.Query().Get("next"))
	if me, ok, err := d.me(r); err == nil && ok {
		to := next
		if to == "" {
			to = "/"
			if me.Operator && me.Account == "" {
				to = "/admin"
			}
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	d.render(w, r, http.StatusOK, "login", view{Title: "Log in", Data: struct{ Next string }{next}})
}

func (d *Dashboard) password(w http.ResponseWriter, r *http.Request) {
	d.headers(w.Header())
	token := r.URL.Query().Get("token")
	d.render(w, r, http.StatusOK, "password", view{Title: "Set your password", Data: struct{ Token string }{token}})
}

var assetTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
}

// serveAsset serves one embedded file by name; there is no listing.
func (d *Dashboard) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	ct, ok := assetTypes[path.Ext(name)]
	f, err := assets.Open("assets/" + name)
	if !ok || err != nil || strings.ContainsAny(name, "/\\") {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=300")
	http.ServeContent(w, r, name, time.Time{}, rs)
}
