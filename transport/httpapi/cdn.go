package httpapi

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

// cdnPath matches the only files served under /cdn: a video's master
// playlist, its renditions' playlists and segments, its thumbnail and its
// preview. Originals, work files and directories never match.
var cdnPath = regexp.MustCompile(`^/cdn/([0-9A-HJKMNP-TV-Z]{26})/(hls/master\.m3u8|hls/(?:[0-9]{1,4}p|audio)/(?:index\.m3u8|seg_[0-9]{5,}\.ts)|thumbnail\.jpg|preview\.mp4|storyboard\.vtt|storyboard\.jpg|download\.mp4)$`)

var contentTypes = map[string]string{
	".m3u8": "application/vnd.apple.mpegurl",
	".ts":   "video/mp2t",
	".jpg":  "image/jpeg",
	".mp4":  "video/mp4",
	".vtt":  "text/vtt; charset=utf-8",
}

// serveMedia serves {cdn_url} files with Range support and open CORS, so a
// player on any origin can fetch them. Outputs never change once written
// (a new upload is a new id), so everything but playlists is cached for a
// year; playlists for a minute, so a deletion is seen soon.
func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Range")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	m := cdnPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return errNotFound("file")
	}
	acc, err := s.mediaAccess(r, m[1])
	if err != nil {
		return err
	}
	f, err := s.cfg.Media.Open(r.Context(), m[1], m[2])
	if domain.IsKind(err, domain.NotFound) || domain.IsKind(err, domain.Invalid) {
		return errNotFound("file")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := checkRanges(w, r, f.Size); err != nil {
		return err
	}
	h.Set("Content-Type", contentTypes[filepath.Ext(m[2])])
	if strings.HasSuffix(m[2], ".m3u8") {
		h.Set("Cache-Control", "public, max-age=60")
	} else {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	if acc.cacheControl(h, m[2]) {
		return s.serveRewritten(w, r, f, m[2], acc.token)
	}
	if f.ETag != "" {
		h.Set("ETag", f.ETag)
	}
	http.ServeContent(&rangeErrorWriter{ResponseWriter: w, r: r, log: s.cfg.Log, size: f.Size}, r, "", f.ModTime, f.ReadSeekCloser)
	return nil
}

// rangeErrorWriter turns the text/plain 416 of http.ServeContent (a range
// outside the file, a malformed Range) into the API's error body, so every
// error status comes from the one table.
type rangeErrorWriter struct {
	http.ResponseWriter
	r       *http.Request
	log     *slog.Logger
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
	respond.Error(w.ResponseWriter, logger(w.r, w.log), domain.E("serve media", domain.Unsatisfiable,
		"the Range header is malformed or asks for no byte of the file (%d bytes)", w.size))
}

func (w *rangeErrorWriter) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
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
