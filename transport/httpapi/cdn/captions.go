package cdn

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/captions"
	"github.com/kino-video/kino/transport/hls"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/wire"
)

// Text tracks as HLS subtitles renditions. The stored master playlist
// names no subtitles: a track can be added or removed at any time, also
// while the video is processed, so the master is served with one
// #EXT-X-MEDIA:TYPE=SUBTITLES per READY track (group "subs", named by its
// label) and SUBTITLES="subs" on each variant stream. Each track's media
// playlist (hls/captions/<track>.m3u8) is one WebVTT segment spanning the
// video, and its WebVTT (hls/captions/<track>.vtt) carries an
// X-TIMESTAMP-MAP that puts the cues' time 0 at the first video segment's
// first presentation time, where players put the video's time 0: read
// from an MPEG-TS segment, 0 for fMP4 segments, whose timeline ffmpeg
// starts at 0 (the first frame shows at its composition offset, a frame
// or two later, which no reader of captions sees).

const (
	subsGroup = "subs"
	// maxMaster bounds a master playlist read to add the renditions (a
	// ladder's master is under a kilobyte).
	maxMaster = 256 << 10
	// defaultStartPTS is the time of a video's first frame when its first
	// segment cannot be read (yet): 0, the start of the fMP4 timeline of
	// every video transcoded since segments are fMP4.
	defaultStartPTS = 0
	// maxStartPTSCache bounds the start times remembered.
	maxStartPTSCache = 10000
)

// readyCaptions counts v's READY tracks.
func readyCaptions(v projections.Video) int {
	n := 0
	for _, c := range v.Captions {
		if c.Status == domain.CaptionReady {
			n++
		}
	}
	return n
}

// hlsName is s as an HLS quoted-string may hold it (no double quote, no
// line break).
func hlsName(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '"':
			return '\''
		case '\r', '\n':
			return ' '
		}
		return r
	}, s)
}

// withCaptions adds v's READY tracks to m as a subtitles group.
func withCaptions(m *hls.Master, v projections.Video) {
	var header []hls.Tag
	for _, t := range m.Header {
		if t.Name() == "#EXT-X-MEDIA" && strings.Contains(t.Value(), "TYPE=SUBTITLES") {
			continue
		}
		header = append(header, t)
	}
	for _, c := range v.Captions {
		if c.Status != domain.CaptionReady {
			continue
		}
		header = append(header, hls.Rendition{Type: "SUBTITLES", GroupID: subsGroup, Language: c.Language,
			Name: hlsName(c.Label), Default: c.Default, AutoSelect: true, URI: "captions/" + c.ID + ".m3u8"}.Tag())
	}
	m.Header = header
	for i := range m.Variants {
		m.Variants[i].Attrs = m.Variants[i].Attrs.Set("SUBTITLES", hls.Quote(subsGroup))
	}
}

// serveMaster serves the master playlist f of acc's video with its text
// tracks (and, for a signed video, the token on every URI).
func (h *Handler) serveMaster(w http.ResponseWriter, r *http.Request, f *media.File, acc Grant) error {
	if f.Size > maxMaster {
		return domain.E("serve media", domain.Internal, "a master playlist of %d bytes is too large", f.Size)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMaster))
	if err != nil {
		return err
	}
	m, err := hls.ParseMaster(data)
	if err != nil {
		return domain.E("serve media", domain.Internal, "master playlist of %s: %v", acc.v.ID, err)
	}
	withCaptions(m, acc.v)
	out, err := m.Encode()
	if err != nil {
		return domain.E("serve media", domain.Internal, "master playlist of %s: %v", acc.v.ID, err)
	}
	return h.serveMade(w, r, out, acc, f.ModTime)
}

// serveMade serves bytes made for this answer: rewritten with the token
// for a signed video, never with an ETag (they change with the tracks).
func (h *Handler) serveMade(w http.ResponseWriter, r *http.Request, body []byte, acc Grant, mod time.Time) error {
	if acc.signed {
		var buf bytes.Buffer
		if err := playback.Rewrite(&buf, bytes.NewReader(body), acc.token, false); err != nil {
			return err
		}
		body = buf.Bytes()
	}
	w.Header().Del("ETag")
	http.ServeContent(&rangeErrorWriter{ResponseWriter: w, h: h, r: r, size: int64(len(body))}, r, "", mod, bytes.NewReader(body))
	return nil
}

// serveCaption serves hls/captions/<track>.m3u8 or .vtt of acc's video.
func (h *Handler) serveCaption(w http.ResponseWriter, r *http.Request, acc Grant, rel string) error {
	name := strings.TrimPrefix(rel, wire.CaptionDir)
	id, ext := strings.TrimSuffix(name, path.Ext(name)), path.Ext(name)
	c, ok := acc.v.Caption(id)
	if !ok || c.Status != domain.CaptionReady {
		return notFound("file")
	}
	vtt, ok, err := h.cfg.Videos.CaptionVTT(acc.v.ID, id)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("file")
	}
	hd := w.Header()
	if acc.signed {
		hd.Set("Cache-Control", "private, no-cache")
	} else {
		hd.Set("Cache-Control", "public, max-age=60") // a deleted track goes soon
	}
	if ext == ".m3u8" {
		hd.Set("Content-Type", contentTypes[".m3u8"])
		return h.serveMade(w, r, captionPlaylist(acc.v, id, vtt), acc, c.CreatedAt)
	}
	hd.Set("Content-Type", contentTypes[".vtt"])
	pts := h.startPTS(r, acc.v)
	body := timestampMapped(vtt, pts)
	http.ServeContent(&rangeErrorWriter{ResponseWriter: w, h: h, r: r, size: int64(len(body))}, r, "", c.CreatedAt, bytes.NewReader(body))
	return nil
}

// captionPlaylist is the media playlist of track id of v: one segment, its
// WebVTT, as long as the video (or, while its duration is not known yet,
// as its last cue).
func captionPlaylist(v projections.Video, id string, vtt []byte) []byte {
	secs := 0.0
	if v.Duration != nil {
		secs = *v.Duration
	}
	if secs <= 0 {
		if t, _, err := captions.Parse(vtt); err == nil {
			secs = t.End().Seconds()
		}
	}
	secs = max(secs, 1)
	var b bytes.Buffer
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:%d\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n", int(math.Ceil(secs)))
	fmt.Fprintf(&b, "#EXTINF:%.3f,\n%s.vtt\n#EXT-X-ENDLIST\n", secs, id)
	return b.Bytes()
}

// timestampMapped is vtt (normalized: its first line is "WEBVTT") with an
// X-TIMESTAMP-MAP header mapping its time 0 to MPEG-TS time pts.
func timestampMapped(vtt []byte, pts int64) []byte {
	first, rest, _ := bytes.Cut(vtt, []byte("\n"))
	var b bytes.Buffer
	b.Grow(len(vtt) + 64)
	b.Write(first)
	fmt.Fprintf(&b, "\nX-TIMESTAMP-MAP=MPEGTS:%d,LOCAL:00:00:00.000\n", pts)
	b.Write(rest)
	return b.Bytes()
}

// ptsCache remembers the start times of COMPLETED videos (their segments
// never change).
type ptsCache struct {
	mu sync.Mutex
	m  map[string]int64
}

// startPTS is the first presentation time of v's first video segment
// (defaultStartPTS when it cannot be read).
func (h *Handler) startPTS(r *http.Request, v projections.Video) int64 {
	h.pts.mu.Lock()
	pts, ok := h.pts.m[v.ID]
	h.pts.mu.Unlock()
	if ok {
		return pts
	}
	pts, err := h.readStartPTS(r.Context(), v.ID)
	if err != nil {
		h.cfg.Logger(r).Debug("start time of a video's segments", "video_id", v.ID, "err", err)
		return defaultStartPTS
	}
	if v.Status == domain.StatusCompleted {
		h.pts.mu.Lock()
		if h.pts.m == nil || len(h.pts.m) >= maxStartPTSCache {
			h.pts.m = map[string]int64{}
		}
		h.pts.m[v.ID] = pts
		h.pts.mu.Unlock()
	}
	return pts
}

// readStartPTS reads the master playlist of video id, its first variant
// stream's playlist and that playlist's first segment.
func (h *Handler) readStartPTS(ctx context.Context, id string) (int64, error) {
	read := func(rel string) ([]byte, error) {
		f, err := h.cfg.Media.Open(ctx, id, rel)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, hls.MaxSize))
	}
	data, err := read(wire.PlaylistPath)
	if err != nil {
		return 0, err
	}
	m, err := hls.ParseMaster(data)
	if err != nil || len(m.Variants) == 0 {
		return 0, fmt.Errorf("master playlist: %v", err)
	}
	rel := path.Join(path.Dir(wire.PlaylistPath), m.Variants[0].URI)
	if !cdnPath.MatchString("/cdn/" + id + "/" + rel) {
		return 0, fmt.Errorf("variant %q is not a rendition's playlist", rel)
	}
	if data, err = read(rel); err != nil {
		return 0, err
	}
	pl, err := hls.ParseMedia(data)
	if err != nil || len(pl.Segments) == 0 {
		return 0, fmt.Errorf("media playlist %s: %v", rel, err)
	}
	seg := path.Join(path.Dir(rel), pl.Segments[0].URI)
	if !cdnPath.MatchString("/cdn/" + id + "/" + seg) {
		return 0, fmt.Errorf("segment %q is not a segment", seg)
	}
	if path.Ext(seg) == ".m4s" {
		return 0, nil
	}
	f, err := h.cfg.Media.Open(ctx, id, seg)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return hls.StartPTS(f)
}
