package player

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

// assets are the files of the pages, served under /assets/. play.js and
// play.css are committed; hls.min.js is copied from npm by `just assets`
// (web/ holds its package.json and lock file) and is absent in a clean
// clone, which still builds: /play then says so.
//
//go:embed assets
var assets embed.FS

// hlsJS is the hls.js build the player loads.
const hlsJS = "hls.min.js"

// hlsBuilt is whether hls.js was built into this binary (`just assets`);
// without it /play plays only where the browser plays HLS.
var hlsBuilt = func() bool {
	_, err := fs.Stat(assets, "assets/"+hlsJS)
	return err == nil
}()

// AssetsBuilt reports whether hls.js was built into this binary.
func AssetsBuilt() bool { return hlsBuilt }

// Host is what the pages need from the API server.
type Host interface {
	// PlayVideo is the video the request's {id} names, rendered as the
	// API's Video object with its media URLs (tokens on them for a signed
	// video), or the error to answer: not found, or a signed video without
	// a valid token.
	PlayVideo(r *http.Request) (wire.Video, error)
}

// Pages serves kino's public pages of a video and their assets.
type Pages struct {
	host     Host
	csp      string
	sameOnly bool // framed only by kino itself
}

// New prepares the pages. mediaBase is the absolute origin media are
// served from when it is not the page's own ("" when it is);
// frameAncestors are the origins allowed to frame the pages, each checked
// by CheckOrigin.
func New(host Host, mediaBase string, frameAncestors []string) (*Pages, error) {
	for _, o := range frameAncestors {
		if err := CheckOrigin(o); err != nil {
			return nil, fmt.Errorf("frame ancestor: %w", err)
		}
	}
	csp, err := playCSP(mediaBase, frameAncestors)
	if err != nil {
		return nil, err
	}
	return &Pages{host: host, csp: csp, sameOnly: len(frameAncestors) == 0}, nil
}

// Routes mounts the pages with mount, which wraps each handler's error
// answer.
func (p *Pages) Routes(mount func(path string, h func(http.ResponseWriter, *http.Request) error, methods ...string)) {
	mount("/play/{id}", p.play, http.MethodGet, http.MethodHead)
	mount("/assets/{name}", p.serveAsset, http.MethodGet, http.MethodHead)
}

// playPage is a minimal player: native HLS where the browser has it
// (Safari, iOS), hls.js elsewhere. It holds no inline script or style:
// its CSP allows scripts and styles only from kino itself.
var playPage = template.Must(template.New("play").Parse(`<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Filename}} · kino</title>
<link rel="stylesheet" href="/assets/play.css">
<main>
<h1>{{.Filename}}</h1>
{{if .Playlist}}<video id="player" controls playsinline poster="{{.Thumbnail}}" data-src="{{.Playlist}}"></video>
<p>{{range .Resolutions}}{{.}} {{end}}· <a href="{{.Playlist}}">playlist</a></p>
{{if .HLSJS}}<script src="/assets/hls.min.js"></script>
{{else}}<p class="warning" id="no-assets">The player assets were not built into this kino (hls.min.js is missing), so only browsers that play HLS themselves (Safari) play here. Operators: run <code>just assets</code> (npm ci) and rebuild kino. The playlist above plays in any HLS player.</p>
{{end}}<script src="/assets/play.js"></script>{{else}}<p>This video is {{.Status}}.</p>{{end}}
</main>
</html>
`))

// play serves a page that plays a video: a convenience for people trying
// kino (the URL `just demo` prints). It shows only what the video's public
// {cdn_url} files show, to whoever knows its unguessable id.
func (p *Pages) play(w http.ResponseWriter, r *http.Request) error {
	v, err := p.host.PlayVideo(r)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	p.headers(h)
	return playPage.Execute(w, struct {
		Filename, Status    string
		Playlist, Thumbnail string
		Resolutions         []string
		HLSJS               bool
	}{v.Filename, string(v.Status), deref(v.PlaylistURL), deref(v.ThumbnailURL), v.Resolutions, hlsBuilt})
}

// headers are the security headers of kino's HTML pages.
func (p *Pages) headers(h http.Header) {
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if p.sameOnly {
		h.Set("X-Frame-Options", "SAMEORIGIN") // for browsers without frame-ancestors
	}
	h.Set("Cache-Control", "no-store")
}

// playCSP is the Content-Security-Policy of the pages: everything from
// kino itself, media (and hls.js's fetches) from the media origin as well,
// MSE and hls.js's worker from blob: URLs, no inline script or style, no
// plugins, forms or <base>; framed only by kino itself and the operator's
// frame ancestors. Without a media origin ("") media come from the page's
// own origin, which 'self' already names: nothing of the request goes
// into the header.
func playCSP(mediaBase string, frameAncestors []string) (string, error) {
	cdn := ""
	if mediaBase != "" {
		u, err := url.Parse(mediaBase)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return "", fmt.Errorf("cdn url %q is not an absolute URL", mediaBase)
		}
		cdn = " " + u.Scheme + "://" + u.Host
	}
	ancestors := append([]string{"'self'"}, frameAncestors...)
	return strings.Join([]string{
		"default-src 'self'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self'" + cdn,
		"media-src 'self'" + cdn + " blob:",
		"connect-src 'self'" + cdn,
		"worker-src 'self' blob:",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors " + strings.Join(ancestors, " "),
	}, "; "), nil
}

var originRE = regexp.MustCompile(`^https?://(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)

// CheckOrigin accepts an origin for frame-ancestors ("https://example.com",
// "https://*.example.com:8443") and nothing that could break out of the
// header (spaces, semicolons, quotes, paths).
func CheckOrigin(o string) error {
	if !originRE.MatchString(o) {
		return fmt.Errorf("%q is not an origin like https://example.com", o)
	}
	return nil
}

var assetTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

func errNoAsset() error { return domain.E("", domain.NotFound, "asset not found") }

// serveAsset serves one embedded file. Names are looked up in the
// embedded tree only; there is no listing.
func (p *Pages) serveAsset(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["name"]
	ct, ok := assetTypes[path.Ext(name)]
	if !ok {
		return errNoAsset()
	}
	f, err := assets.Open("assets/" + name)
	if err != nil {
		return errNoAsset()
	}
	defer f.Close()
	rs, ok := f.(io.ReadSeeker) // embedded files seek; served without a copy
	if !ok {
		return errNoAsset()
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=3600")
	http.ServeContent(w, r, name, time.Time{}, rs)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
