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
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
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
	// PageVideo is video id as a page may show it to r, rendered as the
	// API's Video object with its media URLs (token on each for a signed
	// video, which needs a valid one), or the error to answer: not found
	// (deleted included), or a signed video without a valid token.
	PageVideo(r *http.Request, id, token string) (Video, error)
	// Origin is the scheme and host the pages are served from for r.
	Origin(r *http.Request) string
}

// Video is what a page shows of a video: the API's object, and its
// displayed size when known (COMPLETED).
type Video struct {
	wire.Video
	Width, Height int
	// FrameAncestors are the origins its collection lets frame its pages
	// (none: the server's --play-frame-ancestors, and any site for a
	// public video's /embed when those are not set).
	FrameAncestors []string
}

// Pages serves kino's public pages of a video and their assets.
type Pages struct {
	host     Host
	csp      string
	sameOnly bool // framed only by kino itself
	// embedCSP is the CSP of a public video's /embed without operator
	// frame ancestors: any site may frame it.
	embedCSP  string
	mediaBase string
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
	embedCSP := csp
	if len(frameAncestors) == 0 {
		if embedCSP, err = playCSP(mediaBase, []string{"*"}); err != nil {
			return nil, err
		}
	}
	return &Pages{host: host, csp: csp, sameOnly: len(frameAncestors) == 0, embedCSP: embedCSP, mediaBase: mediaBase}, nil
}

// Routes mounts the pages with mount, which wraps each handler's error
// answer.
func (p *Pages) Routes(mount func(path string, h func(http.ResponseWriter, *http.Request) error, methods ...string)) {
	mount("/play/{id}", p.play, http.MethodGet, http.MethodHead)
	mount("/embed/{id}", p.embed, http.MethodGet, http.MethodHead)
	mount("/oembed", p.oembed, http.MethodGet, http.MethodHead)
	mount("/assets/{name}", p.serveAsset, http.MethodGet, http.MethodHead)
}

// playPage is a minimal player: native HLS where the browser has it
// (Safari, iOS), hls.js elsewhere. It holds no inline script or style:
// its CSP allows scripts and styles only from kino itself.
var playPage = template.Must(template.New("play").Parse(`<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · kino</title>
{{if .OEmbed}}<link rel="alternate" type="application/json+oembed" href="{{.OEmbed}}" title="{{.Title}}">
{{end}}<link rel="stylesheet" href="/assets/play.css">
<main>
<h1>{{.Title}}</h1>
{{if .Playlist}}<video id="player" controls playsinline poster="{{.Thumbnail}}" data-src="{{.Playlist}}" data-storyboard="{{.Storyboard}}"></video>
<p>{{range .Resolutions}}{{.}} {{end}}· <a href="{{.Playlist}}">playlist</a>{{if .Embed}} · <a href="{{.Embed}}">embed</a>{{end}}</p>
{{template "scripts" .}}{{else}}<p>{{.Waiting}}</p>{{end}}
</main>
</html>
{{define "scripts"}}{{if .HLSJS}}<script src="/assets/hls.min.js"></script>
{{else}}<p class="warning" id="no-assets">The player assets were not built into this kino (hls.min.js is missing), so only browsers that play HLS themselves (Safari) play here. Operators: run <code>just assets</code> (npm ci) and rebuild kino. The playlist above plays in any HLS player.</p>
{{end}}<script src="/assets/play.js"></script>{{end}}
`))

// embedPage is the player alone, filling its frame, for an iframe.
var embedPage = template.Must(template.Must(playPage.Clone()).New("embed").Parse(`<!doctype html>
<html lang="en" class="embed">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · kino</title>
{{if .OEmbed}}<link rel="alternate" type="application/json+oembed" href="{{.OEmbed}}" title="{{.Title}}">
{{end}}<link rel="stylesheet" href="/assets/play.css">
{{if .Playlist}}<video id="player" controls playsinline poster="{{.Thumbnail}}" data-src="{{.Playlist}}" data-storyboard="{{.Storyboard}}"></video>
{{template "scripts" .}}{{else}}<p class="message">{{.Waiting}}</p>{{end}}
</html>
`))

// pageData is what the pages' templates show.
type pageData struct {
	Title, Waiting                  string
	Playlist, Thumbnail, Storyboard string
	Embed, OEmbed                   string
	Resolutions                     []string
	HLSJS                           bool
}

// errorPage is a page's answer when there is no video to show: a human
// sentence, never the filename or an internal status.
var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · kino</title>
<link rel="stylesheet" href="/assets/play.css">
<main class="error">
<h1>{{.Title}}</h1>
<p>{{.Text}}</p>
</main>
</html>
`))

// play serves a page that plays a video: a convenience for people trying
// kino (the URL `just demo` prints). It shows only what the video's public
// {cdn_url} files show, to whoever knows its unguessable id.
func (p *Pages) play(w http.ResponseWriter, r *http.Request) error {
	return p.page(w, r, playPage)
}

// embed serves the player alone, for an iframe (the embed code the
// dashboard and oEmbed give).
func (p *Pages) embed(w http.ResponseWriter, r *http.Request) error {
	return p.page(w, r, embedPage)
}

func (p *Pages) page(w http.ResponseWriter, r *http.Request, t *template.Template) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	p.headers(h)
	id := mux.Vars(r)["id"]
	token := r.URL.Query().Get("token")
	v, err := p.host.PageVideo(r, id, token)
	if err != nil {
		return p.errorPage(w, err)
	}
	d := pageData{Title: v.Title, Playlist: deref(v.PlaylistURL), Thumbnail: deref(v.ThumbnailURL),
		Storyboard: deref(v.StoryboardURL), Resolutions: v.Resolutions, HLSJS: hlsBuilt}
	if d.Playlist == "" {
		d.Waiting = waiting(v.Status)
	}
	if len(v.FrameAncestors) > 0 {
		// The collection names the sites that may frame its videos.
		csp, err := playCSP(p.mediaBase, v.FrameAncestors)
		if err != nil {
			return err
		}
		h.Set("Content-Security-Policy", csp)
		h.Del("X-Frame-Options")
	}
	if v.PlaybackPolicy.OrPublic() == domain.PlaybackPublic {
		// Public videos are shared and discovered; a signed video's page
		// names no other URL that would carry its token.
		origin := p.host.Origin(r)
		d.Embed = origin + "/embed/" + v.ID
		d.OEmbed = origin + "/oembed?format=json&url=" + url.QueryEscape(origin+"/play/"+v.ID)
		if t == embedPage && len(v.FrameAncestors) == 0 {
			// Embedded anywhere, unless the operator named the sites.
			h.Set("Content-Security-Policy", p.embedCSP)
			if p.sameOnly {
				h.Del("X-Frame-Options")
			}
		}
	}
	return t.Execute(w, d)
}

// waiting is what a page says of a video without a playlist yet.
func waiting(s domain.Status) string {
	switch s {
	case domain.StatusFailed:
		return "This video cannot be played."
	default:
		return "This video is still being processed. Try again in a minute."
	}
}

// errorPage answers err as a human page with the status respond would
// give it (404 for a missing video, 403 for a signed one without a valid
// token).
func (p *Pages) errorPage(w http.ResponseWriter, err error) error {
	status, title, text := http.StatusInternalServerError, "Something went wrong", "This video cannot be shown right now. Try again later."
	switch domain.KindOf(err) {
	case domain.NotFound, domain.Forbidden:
		status, title, text = http.StatusNotFound, "Video not found", "There is no video at this address, or it was deleted."
	case domain.Denied, domain.Unauthenticated, domain.BadCredentials:
		status, title, text = http.StatusForbidden, "This video is private", "Its owner shares it with a link that carries a token; this link has none, or its token has expired."
	case domain.Unavailable, domain.RateLimited:
		status, text = http.StatusServiceUnavailable, "This video cannot be shown right now. Try again in a few seconds."
	}
	w.WriteHeader(status)
	return errorPage.Execute(w, struct{ Title, Text string }{title, text})
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

// CheckOrigin accepts an origin for frame-ancestors ("https://example.com",
// "https://*.example.com:8443") and nothing that could break out of the
// header (spaces, semicolons, quotes, paths): domain.ValidOrigin.
func CheckOrigin(o string) error {
	if !domain.ValidOrigin(o) {
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

// oEmbed bounds: the default size of an embed, and the largest asked for.
const (
	oembedWidth = 640
	oembedMax   = 4096
)

// oembed answers GET /oembed?url=<a /play or /embed URL of this kino>
// (oEmbed 1.0, type video, JSON only) for public videos: 404 for a URL
// that names no video here, 401 for a signed video, 501 for another
// format, 400 for a bad maxwidth or maxheight.
func (p *Pages) oembed(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if f := q.Get("format"); f != "" && f != "json" {
		respond.JSON(w, http.StatusNotImplemented, wire.Error{Error: "Not implemented", Message: "oEmbed answers format=json only"})
		return nil
	}
	origin := p.host.Origin(r)
	raw := q.Get("url")
	u, err := url.Parse(raw)
	if raw == "" || err != nil || len(raw) > 2048 {
		return domain.E("oembed", domain.Invalid, "url is required: the address of a video's page, %s/play/<id>", origin)
	}
	id, ok := pageID(u.Path)
	if !ok || !strings.EqualFold(u.Scheme+"://"+u.Host, origin) {
		return domain.E("oembed", domain.NotFound, "url is not the address of a video's page on this server (%s/play/<id>)", origin)
	}
	maxW, maxH, err := oembedBounds(q)
	if err != nil {
		return err
	}
	v, err := p.host.PageVideo(r, id, "")
	if domain.KindOf(err) == domain.Denied {
		return domain.E("oembed", domain.Unauthenticated, "this video is signed: it has no public embed")
	}
	if err != nil {
		return err
	}
	width, height := embedSize(v.Width, v.Height, maxW, maxH)
	src := origin + "/embed/" + v.ID
	out := struct {
		Version         string `json:"version"`
		Type            string `json:"type"`
		Title           string `json:"title"`
		ProviderName    string `json:"provider_name"`
		ProviderURL     string `json:"provider_url"`
		HTML            string `json:"html"`
		Width           int    `json:"width"`
		Height          int    `json:"height"`
		ThumbnailURL    string `json:"thumbnail_url,omitempty"`
		ThumbnailWidth  int    `json:"thumbnail_width,omitempty"`
		ThumbnailHeight int    `json:"thumbnail_height,omitempty"`
	}{Version: "1.0", Type: "video", Title: v.Title, ProviderName: "kino", ProviderURL: origin,
		HTML: fmt.Sprintf(`<iframe src="%s" width="%d" height="%d" title="%s" frameborder="0" allow="autoplay; fullscreen; picture-in-picture" allowfullscreen></iframe>`,
			template.HTMLEscapeString(src), width, height, template.HTMLEscapeString(v.Title)),
		Width: width, Height: height}
	if v.ThumbnailURL != nil {
		out.ThumbnailURL = *v.ThumbnailURL
		out.ThumbnailWidth, out.ThumbnailHeight = width, height
	}
	w.Header().Set("Cache-Control", "no-cache")
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// pageID is the video id of a page's path, /play/<id> or /embed/<id>.
func pageID(p string) (string, bool) {
	for _, prefix := range []string{"/play/", "/embed/"} {
		if id, ok := strings.CutPrefix(p, prefix); ok && domain.ValidID(id) {
			return id, true
		}
	}
	return "", false
}

// oembedBounds reads maxwidth and maxheight (0: none).
func oembedBounds(q url.Values) (maxW, maxH int, err error) {
	for name, dst := range map[string]*int{"maxwidth": &maxW, "maxheight": &maxH} {
		if raw := q.Get(name); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil || n < 1 || n > oembedMax {
				return 0, 0, domain.E("oembed", domain.Invalid, "%s must be a number of pixels from 1 to %d (got %q)", name, oembedMax, domain.Truncate(raw, 20))
			}
			*dst = n
		}
	}
	return maxW, maxH, nil
}

// embedSize is an embed's size: oembedWidth wide (or maxW) at the video's
// aspect (16:9 while unknown), within maxW and maxH.
func embedSize(w, h, maxW, maxH int) (int, int) {
	if w <= 0 || h <= 0 {
		w, h = 16, 9
	}
	width := oembedWidth
	if maxW > 0 {
		width = min(width, maxW)
	}
	height := max(1, width*h/w)
	if maxH > 0 && height > maxH {
		height = maxH
		width = max(1, height*w/h)
	}
	return width, height
}
