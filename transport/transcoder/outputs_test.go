package transcoder_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/transcoder"
)

// succeeded is the video's TranscodeSucceeded event.
func (e *env) succeeded(id string) domain.TranscodeSucceeded {
	e.t.Helper()
	if got := e.wait(id, 2*time.Minute); got.status != domain.StatusCompleted {
		e.t.Fatalf("video %s: %+v, want COMPLETED", id, got)
	}
	events, _, err := e.store.Load(context.Background(), stream(id))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range events {
		if d, ok := ev.Data.(domain.TranscodeSucceeded); ok {
			return d
		}
	}
	e.t.Fatalf("video %s: no TranscodeSucceeded", id)
	return domain.TranscodeSucceeded{}
}

func (e *env) file(id, rel string) string {
	e.t.Helper()
	dir, err := e.media.Dir(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return filepath.Join(dir, filepath.FromSlash(rel))
}

// TestStoryboardAndDownload: a completed video asking for a download has
// a storyboard whose every cue names a region inside the sprite's real
// size (by ffprobe), and a download MP4 whose moov precedes its mdat, of
// the highest rung (≤ 1080p) with its audio; one not asking has the
// storyboard and no download.
func TestStoryboardAndDownload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.account("alice", domain.PlanFree)
	dir := t.TempDir()
	// 21 s: tiles of 1 s, three rows of a ten-tile sprite, the last one
	// part-filled. 5 frames a second, as slides might be: a fifth of the
	// encoding.
	src := ffmpegtest.Encode(t, dir, "talk.mkv", 480, 270, 21, true,
		"-r", "5", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac")
	asked := e.uploadAsking(acct, "talk.mkv", src, true)
	// Not asking needs no three rows: 2 s, one tile a second.
	plain := e.uploadAsking(acct, "short.mkv", ffmpegtest.Clip(t, dir, "short.mkv", 480, 270, 2, true), false)

	done := e.succeeded(asked)
	if !done.Storyboard || !done.Download {
		t.Fatalf("TranscodeSucceeded storyboard %t download %t, want both", done.Storyboard, done.Download)
	}
	w, h := probeSize(t, e.file(asked, media.StoryboardImageName))
	vtt, err := os.ReadFile(e.file(asked, media.StoryboardVTTName))
	if err != nil {
		t.Fatal(err)
	}
	cues := parseCues(t, string(vtt))
	if len(cues) != 21 {
		t.Errorf("%d cues, want one a second over 21 s", len(cues))
	}
	var end float64
	for i, c := range cues {
		if c.image != "storyboard.jpg" {
			t.Errorf("cue %d points at %q, not the sprite beside the track", i, c.image)
		}
		if c.w <= 0 || c.h <= 0 || c.x < 0 || c.y < 0 || c.x+c.w > w || c.y+c.h > h {
			t.Errorf("cue %d region %d,%d %dx%d is outside the %dx%d sprite", i, c.x, c.y, c.w, c.h, w, h)
		}
		if c.from != end || c.to <= c.from {
			t.Errorf("cue %d runs %g..%g after one ending at %g", i, c.from, c.to, end)
		}
		end = c.to
	}
	if end < 20.9 || end > 21.1 {
		t.Errorf("cues end at %g, not at the video's end", end)
	}

	dl := e.file(asked, media.DownloadName)
	boxes := topBoxes(t, dl)
	moov, mdat := slices.Index(boxes, "moov"), slices.Index(boxes, "mdat")
	if moov < 0 || mdat < 0 || moov > mdat {
		t.Errorf("download boxes %v: want moov before mdat", boxes)
	}
	if dw, dh := probeSize(t, dl); dw != 426 || dh != 240 {
		t.Errorf("download is %dx%d, want the (only) 240p rung's 426x240", dw, dh)
	}
	if got := ffprobeField(t, dl, "a:0", "codec_name"); got != "aac" {
		t.Errorf("download audio %q, want aac", got)
	}

	done = e.succeeded(plain)
	if !done.Storyboard || done.Download {
		t.Errorf("not asked: storyboard %t download %t, want storyboard only", done.Storyboard, done.Download)
	}
	if _, err := os.Stat(e.file(plain, media.DownloadName)); !os.IsNotExist(err) {
		t.Errorf("download.mp4 of a video that did not ask for one: %v", err)
	}
}

// TestFastPath: an H.264 yuv420p AAC source of exactly its top rung's
// size, within its cap, has that rung copied (its Constrained Baseline
// profile, not kino's High) and still plays as the ladder (verified as
// every output is); one over the cap is encoded.
func TestFastPath(t *testing.T) {
	t.Parallel()
	var early earlyMasters
	e := newEnv(t, early.capture)
	acct := e.account("bob", domain.PlanFree)
	dir := t.TempDir()
	// 3 s: one segment a rung holds what the test looks at.
	within := ffmpegtest.Encode(t, dir, "within.mp4", 640, 360, 3, true, ffmpegtest.H264Options()...)
	over := ffmpegtest.Encode(t, dir, "over.mp4", 640, 360, 3, true, append(ffmpegtest.H264Options(), "-qp", "4", "-b:v", "5000k", "-maxrate", "6000k")...)
	fast := e.uploadAsking(acct, "within.mp4", within, true)
	slow := e.uploadAsking(acct, "over.mp4", over, false)

	for _, tt := range []struct {
		id, profile string
	}{{fast, "Constrained Baseline"}, {slow, "High"}} {
		done := e.succeeded(tt.id)
		if strings.Join(done.Resolutions, ",") != "360p,240p" {
			t.Fatalf("resolutions %v", done.Resolutions)
		}
		if got := ffprobeField(t, ffmpegtest.Segment(t, e.file(tt.id, "hls/360p"), "seg_00000.m4s"), "v:0", "profile"); got != tt.profile {
			t.Errorf("%s: 360p profile %q, want %q", tt.id, got, tt.profile)
		}
		if got := ffprobeField(t, ffmpegtest.Segment(t, e.file(tt.id, "hls/240p"), "seg_00000.m4s"), "v:0", "profile"); got != "High" {
			t.Errorf("%s: 240p profile %q, want kino's High", tt.id, got)
		}
	}
	// The download of the fast path is the copied stream too.
	if got := ffprobeField(t, e.file(fast, media.DownloadName), "v:0", "profile"); got != "Constrained Baseline" {
		t.Errorf("download profile %q, want the source's", got)
	}
	// Every variant names its codecs, the copied one's the source's
	// (Constrained Baseline: profile 0x42, constraint flags 0xc0),
	// and its frame rate, while processing and after: hls.js switches only
	// between variants of the codecs it started with.
	masters := append(early.all(), e.read(fast, "hls/master.m3u8"), e.read(slow, "hls/master.m3u8"))
	if len(masters) != 4 {
		t.Fatalf("%d masters published while processing, want 2", len(masters)-2)
	}
	copied := regexp.MustCompile(`RESOLUTION=640x360,.*CODECS="avc1\.42c0[0-9a-f]{2},mp4a\.40\.2"`)
	for _, m := range masters {
		infs := regexp.MustCompile(`(?m)^#EXT-X-STREAM-INF:.*$`).FindAllString(m, -1)
		if len(infs) != 2 {
			t.Fatalf("master playlist:\n%s", m)
		}
		for _, inf := range infs {
			if !strings.Contains(inf, `CODECS="avc1.`) || !strings.Contains(inf, `,mp4a.40.2"`) {
				t.Errorf("a variant without its codecs: %s", inf)
			}
			if !strings.Contains(inf, ",FRAME-RATE=25.000") { // the sources' rate
				t.Errorf("a variant without its frame rate: %s", inf)
			}
		}
	}
	if n := len(copied.FindAllString(strings.Join(masters, "\n"), -1)); n != 2 {
		t.Errorf("the copied 360p's CODECS in %d of the fast video's 2 masters, want avc1.42c0LL:\n%s", n, strings.Join(masters, "\n"))
	}
	// Its 240p steps down from the copy (400 kbit/s, half 360p's cap),
	// capped at half its own cap: a player stepping down saves bits.
	var size [2]int64
	for i, rung := range []string{"hls/360p", "hls/240p"} {
		st, err := os.Stat(filepath.Join(e.file(fast, rung), "seg_00000.m4s"))
		if err != nil {
			t.Fatal(err)
		}
		size[i] = st.Size()
	}
	if size[1]*4 > size[0]*3 {
		t.Errorf("fast path: 240p's segment %d bytes, 360p's (copied) %d: the lower rung saves less than a quarter", size[1], size[0])
	}
}

type cue struct {
	from, to   float64
	image      string
	x, y, w, h int
}

var cueLine = regexp.MustCompile(`^(\d\d):(\d\d):(\d\d)\.(\d\d\d) --> (\d\d):(\d\d):(\d\d)\.(\d\d\d)$`)
var cuePayload = regexp.MustCompile(`^([^#]+)#xywh=(\d+),(\d+),(\d+),(\d+)$`)

// parseCues reads a WebVTT thumbnails track: a header, then cues of a
// timing line and a payload naming an image region.
func parseCues(t *testing.T, vtt string) []cue {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(vtt), "\n")
	if lines[0] != "WEBVTT" {
		t.Fatalf("track starts with %q", lines[0])
	}
	var cues []cue
	for i := 1; i < len(lines); i++ {
		m := cueLine.FindStringSubmatch(lines[i])
		if m == nil {
			if lines[i] != "" {
				t.Fatalf("line %d: %q", i, lines[i])
			}
			continue
		}
		at := func(g []string) float64 {
			n := make([]float64, 4)
			for k := range n {
				n[k], _ = strconv.ParseFloat(g[k], 64)
			}
			return n[0]*3600 + n[1]*60 + n[2] + n[3]/1000
		}
		if i+1 >= len(lines) {
			t.Fatalf("cue at line %d without payload", i)
		}
		p := cuePayload.FindStringSubmatch(lines[i+1])
		if p == nil {
			t.Fatalf("payload %q", lines[i+1])
		}
		c := cue{from: at(m[1:5]), to: at(m[5:9]), image: p[1]}
		c.x, _ = strconv.Atoi(p[2])
		c.y, _ = strconv.Atoi(p[3])
		c.w, _ = strconv.Atoi(p[4])
		c.h, _ = strconv.Atoi(p[5])
		cues = append(cues, c)
		i++
	}
	return cues
}

func ffprobeField(t *testing.T, file, stream, field string) string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "stream="+field, "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", file, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(first)
}

func probeSize(t *testing.T, file string) (int, int) {
	t.Helper()
	w, _ := strconv.Atoi(ffprobeField(t, file, "v:0", "width"))
	h, _ := strconv.Atoi(ffprobeField(t, file, "v:0", "height"))
	if w <= 0 || h <= 0 {
		t.Fatalf("%s: no picture size", file)
	}
	return w, h
}

// topBoxes reads an MP4's top-level box types in order.
func topBoxes(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for off := uint64(0); off+8 <= uint64(len(data)); {
		size := uint64(binary.BigEndian.Uint32(data[off:]))
		if size == 1 && off+16 <= uint64(len(data)) {
			size = binary.BigEndian.Uint64(data[off+8:])
		}
		if size < 8 {
			t.Fatalf("box at %d has size %d", off, size)
		}
		out = append(out, string(data[off+4:off+8]))
		off += size
	}
	return out
}

// TestFastPathDropsFillerData: a source at a constant bitrate padded with
// filler data (x264's CBR, OBS's default) is copied without it: a flat
// picture at 400 kbit/s keeps a few KB of its 150, and the copy is still
// the source's stream, its pictures as they were.
func TestFastPathDropsFillerData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.account("bob", domain.PlanFree)
	src := filepath.Join(t.TempDir(), "padded.mp4")
	ffmpegtest.Run(t, "-f", "lavfi", "-i", "color=c=gray:size=640x360:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "50",
		"-b:v", "400k", "-minrate", "400k", "-maxrate", "400k", "-bufsize", "400k", "-x264-params", "nal-hrd=cbr:filler=1", "-c:a", "aac", "-ac", "2", src)
	id := e.uploadAsking(acct, "padded.mp4", src, true)
	e.succeeded(id)
	seg := ffmpegtest.Segment(t, e.file(id, "hls/360p"), "seg_00000.m4s")
	if got := ffprobeField(t, seg, "v:0", "profile"); got != "Constrained Baseline" {
		t.Fatalf("360p profile %q: not the source's stream", got)
	}
	ff := func(file string, opts ...string) []byte {
		args := append([]string{"-v", "error", "-i", file, "-map", "0:v"}, opts...)
		out, err := exec.Command("ffmpeg", append(args, "-")...).Output()
		if err != nil {
			t.Fatalf("ffmpeg %v: %v", args, err)
		}
		return out
	}
	source, copied := ff(src, "-c", "copy", "-f", "h264"), ff(seg, "-c", "copy", "-f", "h264")
	if len(copied)*10 > len(source) {
		t.Errorf("the copy keeps %d of the source's %d bytes of video", len(copied), len(source))
	}
	// The same pictures, every one decoded.
	if got, want := ff(seg, "-f", "md5"), ff(src, "-f", "md5"); !bytes.Equal(got, want) {
		t.Errorf("the copy decodes to other pictures than the source: %s against %s", got, want)
	}
}

// TestFastPathFromMatroskaAndMPEGTS: a source whose container gives no
// video bit rate still has its top rung copied, and that rung listed in
// the master (ffmpeg's HLS muxer leaves out a variant of unknown rate):
// from Matroska, which gives no rate at all, the audio is encoded; from
// MPEG-TS, which gives the audio's, the ADTS AAC is copied into fMP4. The
// master published while processing announces the copy at no less than
// the source's rate (ffmpeg's guess was the audio's alone).
func TestFastPathFromMatroskaAndMPEGTS(t *testing.T) {
	t.Parallel()
	var early earlyMasters
	e := newEnv(t, early.capture)
	acct := e.account("bob", domain.PlanFree)
	dir := t.TempDir()
	mkv := ffmpegtest.Encode(t, dir, "within.mkv", 640, 360, 3, true, ffmpegtest.H264Options()...)
	ts := filepath.Join(dir, "within.mpg")
	ffmpegtest.Run(t, "-i", mkv, "-c", "copy", "-f", "mpegts", ts)
	for _, tt := range []struct{ name, path string }{{"within.mkv", mkv}, {"within.mpg", ts}} {
		id := e.uploadAsking(acct, tt.name, tt.path, false)
		done := e.succeeded(id)
		if strings.Join(done.Resolutions, ",") != "360p,240p" {
			t.Fatalf("%s: resolutions %v", tt.name, done.Resolutions)
		}
		if got := ffprobeField(t, ffmpegtest.Segment(t, e.file(id, "hls/360p"), "seg_00000.m4s"), "v:0", "profile"); got != "Constrained Baseline" {
			t.Errorf("%s: 360p profile %q: not the source's stream", tt.name, got)
		}
		if m := e.read(id, "hls/master.m3u8"); !strings.Contains(m, "360p/index.m3u8") {
			t.Errorf("%s: the master does not list the copied rung:\n%s", tt.name, m)
		}
	}
	masters := early.all()
	if len(masters) != 2 {
		t.Fatalf("%d masters published while processing, want 2", len(masters))
	}
	copied := regexp.MustCompile(`BANDWIDTH=(\d+),RESOLUTION=640x360`)
	for _, m := range masters {
		bw := copied.FindStringSubmatch(m)
		if bw == nil {
			t.Errorf("no copied 360p in the master published while processing:\n%s", m)
			continue
		}
		if n, _ := strconv.Atoi(bw[1]); n < 400_000 { // the source's video alone: 400 kbit/s
			t.Errorf("the copied 360p announced at %d bit/s while processing:\n%s", n, m)
		}
	}
}

// earlyMasters are the master playlists a transcoder published while
// processing, one per video, as each ladder ended.
type earlyMasters struct {
	mu   sync.Mutex
	list []string
}

// capture configures a transcoder to keep them.
func (m *earlyMasters) capture(c *transcoder.Config) {
	transcoder.SetEncodeHooks(c, nil, func(work string) {
		data, err := os.ReadFile(filepath.Join(work+transcoder.StagedSuffix, "hls", "master.m3u8"))
		m.mu.Lock()
		defer m.mu.Unlock()
		m.list = append(m.list, fmt.Sprintf("%s%v", data, err))
	})
}

func (m *earlyMasters) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.list)
}
