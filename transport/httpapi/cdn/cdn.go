package cdn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/wire"
)

// Videos reads the videos' records and their text tracks' cues
// (projections.DB).
type Videos interface {
	Video(id string) (projections.Video, bool, error)
	CaptionVTT(id, track string) ([]byte, bool, error)
}

// Media opens a video's file (the media store).
type Media interface {
	Open(ctx context.Context, id, rel string) (*media.File, error)
}

// Redirector hands out short-lived URLs that read a video's file straight
// from the object store (media.Bucket on S3), answered with the given
// Content-Type and Cache-Control; a missing file is a NotFound.
type Redirector interface {
	Presign(ctx context.Context, id, rel string, ttl time.Duration, contentType, cacheControl string) (*url.URL, error)
}

// Config wires /cdn.
type Config struct {
	Videos Videos
	Media  Media
	// Redirect, when set, answers a GET of a file that is served as it is
	// stored (segments, stills, previews, downloads) with a redirect to
	// it in the object store, after the same checks; nil: /cdn serves
	// every file itself.
	Redirect Redirector
	Tokens   playback.Tokens
	// Logger is the request's logger.
	Logger func(r *http.Request) *slog.Logger
}

// Handler serves /cdn.
type Handler struct {
	cfg Config
	pts ptsCache
}

// New makes the /cdn handler.
func New(cfg Config) *Handler { return &Handler{cfg: cfg} }

func notFound(what string) error { return domain.E("", domain.NotFound, "%s not found", what) }

// cdnPath matches the only files served under /cdn: a video's master
// playlist, its renditions' playlists, segments (fMP4, with their
// initialization segment; MPEG-TS in videos transcoded before fMP4), its
// thumbnail and its preview. Originals, work files and directories never match.
var cdnPath = regexp.MustCompile(`^/cdn/([0-9A-HJKMNP-TV-Z]{26})/(hls/master\.m3u8|hls/(?:[0-9]{1,4}p|audio)/(?:index\.m3u8|seg_[0-9]{5,}\.(?:ts|m4s)|init(?:_[0-9]{1,3})?\.mp4)|thumbnail\.jpg|preview\.mp4|preview\.webp|storyboard\.vtt|storyboard\.jpg|download\.mp4|hls/captions/[0-9A-HJKMNP-TV-Z]{26}\.(?:m3u8|vtt))$`)

var contentTypes = map[string]string{
	".m3u8": "application/vnd.apple.mpegurl",
	".ts":   "video/mp2t",
	".m4s":  "video/iso.segment",
	".jpg":  "image/jpeg",
	".mp4":  "video/mp4",
	".vtt":  "text/vtt; charset=utf-8",
	".webp": "image/webp",
}

// Serve serves {cdn_url} files with Range support and open CORS, so a
// player on any origin can fetch them. Outputs never change once written
// (a new upload is a new id), so everything but playlists is cached for a
// year; playlists for a minute, so a deletion is seen soon.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request) error {
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges")
	if r.Method == http.MethodOptions {
		hd.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		hd.Set("Access-Control-Allow-Headers", "Range")
		hd.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	m := cdnPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return notFound("file")
	}
	acc, err := h.Access(r, m[1])
	if err != nil {
		return err
	}
	if strings.HasPrefix(m[2], wire.CaptionDir) {
		return h.serveCaption(w, r, acc, m[2])
	}
	ct, cc, rewrite := acc.headers(m[2])
	if h.cfg.Redirect != nil && r.Method == http.MethodGet && !rewrite && !strings.HasSuffix(m[2], ".m3u8") {
		return h.redirect(w, r, m[1], m[2], ct, cc)
	}
	f, err := h.cfg.Media.Open(r.Context(), m[1], m[2])
	if domain.IsKind(err, domain.NotFound) || domain.IsKind(err, domain.Invalid) {
		return notFound("file")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkRanges(w, r, f.Size); err != nil {
		return err
	}
	hd.Set("Content-Type", ct)
	hd.Set("Cache-Control", cc)
	if m[2] == wire.PlaylistPath && readyCaptions(acc.v) > 0 {
		return h.serveMaster(w, r, f, acc)
	}
	if rewrite {
		return h.serveRewritten(w, r, f, m[2], acc.token)
	}
	if f.ETag != "" {
		hd.Set("ETag", f.ETag)
	}
	defer respond.Cork(r.Context())() // full segments while the file is sent; the rest at once when done
	http.ServeContent(&rangeErrorWriter{ResponseWriter: w, h: h, r: r, size: f.Size}, r, "", f.ModTime, f.ReadSeekCloser)
	return nil
}

// rangeErrorWriter turns the text/plain 416 of http.ServeContent (a range
// outside the file, a malformed Range) into the API's error body, so every
// error status comes from the one table.
type rangeErrorWriter struct {
	http.ResponseWriter
	h       *Handler
	r       *http.Request // whose logger, made only for a 416, answers it
	size    int64
	swallow bool
}

func (w *rangeErrorWriter) WriteHeader(code int) {
	if code != http.StatusRequestedRangeNotSatisfiable {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.swallow = true
	w.Header().Del("Cache-Control")
	w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(w.size, 10))
	respond.Error(w.ResponseWriter, w.h.cfg.Logger(w.r), domain.E("serve media", domain.Unsatisfiable,
		"the Range header is malformed or asks for no byte of the file (%d bytes)", w.size))
}

func (w *rangeErrorWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// ReadFrom passes a file's copy (http.ServeContent's io.CopyN) on to the
// connection's own ReadFrom, which sends it with sendfile: without it the
// wrapper hides that and every byte goes through a buffer in the process.
func (w *rangeErrorWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.swallow {
		return io.Copy(io.Discard, r)
	}
	return respond.ReadFrom(w.ResponseWriter, r)
}

func (w *rangeErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// maxRanges is the most byte ranges one request may ask for. Players ask
// for one; a request for thousands (each a part of a multipart answer)
// costs the server far more than it costs the client.
const maxRanges = 16

// checkRanges refuses a Range header with more than maxRanges ranges:
// 416 with the error body, and Content-Range "bytes */size" as RFC 9110
// asks of a 416. The ranges are counted by their commas, before anything
// is parsed, so a 40 000-range header costs one pass over its bytes.
// (Ignoring the header and sending the whole file instead would answer a
// hostile request with more bytes, and hide from a confused client that
// its request was refused.)
func checkRanges(w http.ResponseWriter, r *http.Request, size int64) error {
	rh := r.Header.Get("Range")
	if rh == "" {
		return nil
	}
	if n := strings.Count(rh, ",") + 1; n > maxRanges {
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		return domain.E("serve media", domain.Unsatisfiable, "a request may ask for at most %d byte ranges (got %d)", maxRanges, n)
	}
	return nil
}

// verifyPlayback checks token for video v, as requested by r: the one
// check of every signed media request.
func (h *Handler) verifyPlayback(r *http.Request, v projections.Video, token string) error {
	claims, err := h.cfg.Tokens.Verify(r.Context(), v.ID, v.Account, token)
	if err != nil {
		return err
	}
	if claims.Origin != "" && !strings.EqualFold(requestOrigin(r), claims.Origin) {
		return playback.Denied("the token is for pages of another origin")
	}
	return nil
}

// requestOrigin is the Origin header of r, or else the origin of its
// Referer ("" when it has neither).
func requestOrigin(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		return o
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		if u, err := url.Parse(ref); err == nil && u.Scheme != "" && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return ""
}

// Redirects: a presigned URL lives presignTTL; the redirect itself may be
// kept by the browser (never a shared cache) for redirectMaxAge, so a URL
// taken from its cache has most of its life left.
const (
	presignTTL     = 10 * time.Minute
	redirectMaxAge = time.Minute
)

// redirect answers 302 to file rel of video id in the object store, to be
// read with contentType and cacheControl.
func (h *Handler) redirect(w http.ResponseWriter, r *http.Request, id, rel, contentType, cacheControl string) error {
	hd := w.Header()
	u, err := h.cfg.Redirect.Presign(r.Context(), id, rel, presignTTL, contentType, cacheControl)
	if domain.IsKind(err, domain.NotFound) || domain.IsKind(err, domain.Invalid) {
		return notFound("file")
	}
	if err != nil {
		return err
	}
	hd.Set("Cache-Control", fmt.Sprintf("private, max-age=%d", int(redirectMaxAge/time.Second)))
	hd.Set("Location", u.String())
	w.WriteHeader(http.StatusFound)
	return nil
}

// Grant is what /cdn learned of a request for a video's file.
type Grant struct {
	v         projections.Video
	signed    bool   // the video is signed, and token was found valid for it
	token     string // the request's valid token (signed only)
	completed bool   // the video is COMPLETED: its playlists no longer change
}

// Access decides whether r may fetch the files of video id: 404 when
// the read models know no such video (files outlive nothing: a deleted
// video's leftovers are not served), 403 when it is signed and r has no
// valid token.
func (h *Handler) Access(r *http.Request, id string) (Grant, error) {
	v, ok, err := h.cfg.Videos.Video(id)
	if err != nil {
		return Grant{}, err
	}
	if !ok {
		return Grant{}, notFound("file")
	}
	a := Grant{v: v, completed: v.Status == domain.StatusCompleted}
	if v.PlaybackPolicy.OrPublic() != domain.PlaybackSigned {
		return a, nil
	}
	token := r.URL.Query().Get("token")
	if err := h.verifyPlayback(r, v, token); err != nil {
		return Grant{}, err
	}
	a.signed, a.token = true, token
	return a, nil
}

// headers are the Content-Type and Cache-Control of file rel, and whether
// it is served rewritten (the playlists and storyboard of a signed video,
// which list URIs that need the token).
func (a Grant) headers(rel string) (contentType, cacheControl string, rewrite bool) {
	contentType = contentTypes[filepath.Ext(rel)]
	playlist := strings.HasSuffix(rel, ".m3u8")
	switch {
	case a.signed && (playlist || rel == wire.StoryboardPath):
		return contentType, "private, no-cache", true
	case playlist && !a.completed:
		cacheControl = "no-cache" // an EVENT playlist still growing
	case playlist:
		cacheControl = "public, max-age=60"
	case rel == wire.ThumbnailPath || rel == wire.AnimatedPath:
		cacheControl = "public, max-age=300" // remade when another moment is chosen
	default:
		cacheControl = "public, max-age=31536000, immutable"
	}
	if a.signed {
		// Bytes that never change, for this browser only: a shared cache
		// must not hand them to requests without a token.
		cacheControl = "private, max-age=3600"
		if rel == wire.ThumbnailPath || rel == wire.AnimatedPath {
			cacheControl = "private, max-age=300"
		}
	}
	return contentType, cacheControl, false
}

// serveRewritten serves a playlist or storyboard of a signed video with
// token added to every URI it lists. The bytes depend on the token, so
// there is no ETag and no Range (a 200 with the whole file: RFC 9110
// lets a server ignore Range); the rewrite streams line by line, so a long
// playlist asked for by many clients at once with a long token costs a
// line of memory each, not the rewritten file.
func (h *Handler) serveRewritten(w http.ResponseWriter, r *http.Request, f *media.File, rel, token string) error {
	if f.Size > playback.MaxRewrite {
		return domain.E("serve media", domain.Internal, "%s of %d bytes is too large to rewrite", rel, f.Size)
	}
	hd := w.Header()
	hd.Del("Accept-Ranges")
	hd.Del("ETag")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if err := playback.Rewrite(w, f, token, rel == wire.StoryboardPath); err != nil {
		// The status is out: the client sees a short body. Logged, not
		// answered.
		h.cfg.Logger(r).Warn("rewrite media for a token", "file", rel, "err", err)
	}
	return nil
}
