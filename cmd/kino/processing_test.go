package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/transcoder"
)

// withTranscoder runs one in-process transcoder with test-sized retries.
func withTranscoder(c *Config) {
	c.Workers = WorkerConfig{Transcoders: 1, Attempts: 2, Backoff: []time.Duration{time.Millisecond}, AckWait: 30 * time.Second, Stall: time.Minute}
}

// makeClip renders a test clip with ffmpeg: testsrc2 video of w×h for
// seconds, with a sine tone unless audio is false, into name (its extension
// picks the container).
func makeClip(t testing.TB, name string, w, h int, seconds float64, audio bool) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	args := []string{"-loglevel", "error", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", w, h)}
	if audio {
		args = append(args, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000")
	}
	args = append(args, "-t", strconv.FormatFloat(seconds, 'f', -1, 64), "-pix_fmt", "yuv420p")
	switch filepath.Ext(name) {
	case ".webm":
		args = append(args, "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k")
		if audio {
			args = append(args, "-c:a", "libopus")
		}
	default:
		args = append(args, "-c:v", "libx264", "-preset", "ultrafast")
		if audio {
			args = append(args, "-c:a", "aac")
		}
	}
	args = append(args, path)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// remux copies mp4 into name with extra ffmpeg options.
func remux(t testing.TB, mp4 []byte, name string, opts ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.mp4"), filepath.Join(dir, name)
	if err := os.WriteFile(in, mp4, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-loglevel", "error", "-i", in, "-c", "copy"}, opts...)
	if b, err := exec.Command("ffmpeg", append(args, out)...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rotated remuxes an mp4 into name with a 90° display rotation, as a phone
// writes a portrait video (ffmpeg 5.1 honours the tag only when copying).
func rotated(t testing.TB, mp4 []byte, name string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.mp4"), filepath.Join(dir, name)
	if err := os.WriteFile(in, mp4, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("ffmpeg", "-loglevel", "error", "-i", in, "-c", "copy", "-metadata:s:v:0", "rotate=90", out).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitStatus polls GET /v1/videos/{id}, as a client does, until the video
// reaches want (or a terminal status), within a deadline.
func (h *harness) waitStatus(key, id string, want domain.Status) map[string]any {
	h.t.Helper()
	// The wait reads this node's read models, not the API: polling the API
	// every few milliseconds spent the account's rate limit while a slow
	// machine transcoded, and the next request of the test got 429. First
	// they catch up with the stream as it is now, as the account's next
	// request would wait for its own writes (a retry just answered).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if last, err := h.m.store.LastSeq(ctx); err != nil {
		h.t.Fatal(err)
	} else if err := h.m.projector.WaitFor(ctx, last); err != nil {
		h.t.Fatal(err)
	}
	eventstoretest.EventuallyEvery(h.t, "video "+id+" "+string(want), 20*time.Millisecond, func() (bool, string) {
		v, ok, err := h.m.db.Video(id)
		if err != nil {
			h.t.Fatal(err)
		}
		if ok && v.Status != want && (v.Status == domain.StatusCompleted || v.Status == domain.StatusFailed) {
			r := h.do("GET", "/v1/videos/"+id, key, nil)
			h.t.Fatalf("video %s is %s, want %s: %s", id, v.Status, want, r.body)
		}
		return ok && v.Status == want, fmt.Sprintf("still %s (known: %v)", v.Status, ok)
	})
	r := h.do("GET", "/v1/videos/"+id, key, nil)
	if r.status != 200 {
		h.t.Fatalf("GET video: %d %s", r.status, r.body)
	}
	return r.json(h.t)
}

func (h *harness) uploadID(key, coll, name string, data []byte) string {
	h.t.Helper()
	r := h.upload(key, coll, name, data)
	if r.status != 202 {
		h.t.Fatalf("upload %s: %d %s", name, r.status, r.body)
	}
	return r.json(h.t)["video"].(map[string]any)["id"].(string)
}

func (h *harness) get(url string, header ...string) response {
	h.t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

type probed struct {
	Streams []struct {
		CodecType string `json:"codec_type"`
		Width     int    `json:"width"`
		Height    int    `json:"height"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

func ffprobe(t testing.TB, target string) probed {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-print_format", "json", "-show_streams", "-show_format", target).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", target, err)
	}
	var p probed
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p probed) video() (w, h int) {
	for _, s := range p.Streams {
		if s.CodecType == "video" {
			return s.Width, s.Height
		}
	}
	return 0, 0
}

func (p probed) duration() float64 {
	d, _ := strconv.ParseFloat(p.Format.Duration, 64)
	return d
}

func TestProcessingEndToEnd(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "landscape.mp4", makeClip(t, "landscape.mp4", 640, 360, 2, true))

	v := h.waitStatus(key, id, domain.StatusCompleted)
	cdn := h.m.CDNURL + "/" + id
	if v["playlistUrl"] != cdn+"/hls/master.m3u8" || v["thumbnailUrl"] != cdn+"/thumbnail.jpg" || v["previewUrl"] != cdn+"/preview.mp4" {
		t.Fatalf("media urls: %v %v %v", v["playlistUrl"], v["thumbnailUrl"], v["previewUrl"])
	}
	if v["errorMessage"] != nil || v["progress"] != float64(1) {
		t.Fatalf("completed video: %v", v)
	}
	if d, _ := v["duration"].(float64); d < 1.9 || d > 2.1 {
		t.Fatalf("duration %v, want 2 ± 0.1", v["duration"])
	}
	var res []string
	for _, r := range v["resolutions"].([]any) {
		res = append(res, r.(string))
	}
	if !slices.Equal(res, []string{"360p", "240p"}) {
		t.Fatalf("resolutions %v", res)
	}

	// processedSize is the bytes of every output on disk.
	dir := filepath.Join(h.data, "media", id)
	var onDisk int64
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && !strings.HasPrefix(fi.Name(), "original") {
			onDisk += fi.Size()
		}
		return nil
	})
	if v["processedSize"] != float64(onDisk) {
		t.Fatalf("processedSize %v, on disk %d", v["processedSize"], onDisk)
	}

	// The master lists every rung with BANDWIDTH and RESOLUTION, and each
	// rung's playlist decodes at its height, fetched through {cdn_url}.
	master := h.get(v["playlistUrl"].(string))
	if master.status != 200 || master.header.Get("Content-Type") != "application/vnd.apple.mpegurl" || master.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("master: %d %v", master.status, master.header)
	}
	for _, rung := range []struct {
		name   string
		height int
	}{{"360p", 360}, {"240p", 240}} {
		// BANDWIDTH and AVERAGE-BANDWIDTH measured once encoded: the peak
		// at least the average.
		re := regexp.MustCompile(`#EXT-X-STREAM-INF:BANDWIDTH=(\d+),AVERAGE-BANDWIDTH=(\d+),RESOLUTION=\d+x` + strconv.Itoa(rung.height) + `[^\n]*\n` + rung.name + `/index\.m3u8`)
		m := re.FindSubmatch(master.body)
		if m == nil {
			t.Fatalf("master lacks %s with BANDWIDTH, AVERAGE-BANDWIDTH and RESOLUTION:\n%s", rung.name, master.body)
		}
		peak, _ := strconv.Atoi(string(m[1]))
		avg, _ := strconv.Atoi(string(m[2]))
		if peak < avg || avg <= 0 {
			t.Fatalf("%s: BANDWIDTH %s under AVERAGE-BANDWIDTH %s", rung.name, m[1], m[2])
		}
		if _, hgt := ffprobe(t, cdn+"/hls/"+rung.name+"/index.m3u8").video(); hgt != rung.height {
			t.Fatalf("%s decodes at height %d", rung.name, hgt)
		}
	}

	thumb := h.get(v["thumbnailUrl"].(string))
	if thumb.status != 200 || thumb.header.Get("Content-Type") != "image/jpeg" || !bytes.HasPrefix(thumb.body, []byte{0xFF, 0xD8}) {
		t.Fatalf("thumbnail: %d %v", thumb.status, thumb.header)
	}
	preview := h.get(v["previewUrl"].(string))
	if preview.status != 200 || preview.header.Get("Content-Type") != "video/mp4" {
		t.Fatalf("preview: %d %v", preview.status, preview.header)
	}
	if moov, mdat := bytes.Index(preview.body, []byte("moov")), bytes.Index(preview.body, []byte("mdat")); moov < 0 || moov > mdat {
		t.Fatalf("preview is not faststart: moov at %d, mdat at %d", moov, mdat)
	}
	pp := ffprobe(t, v["previewUrl"].(string))
	if w, hgt := pp.video(); pp.duration() > 6.05 || min(w, hgt) > 480 || hgt == 0 {
		t.Fatalf("preview %dx%d %.2fs", w, hgt, pp.duration())
	}

	// CDN: ranges, caching, and nothing but the outputs.
	part := h.get(v["previewUrl"].(string), "Range", "bytes=0-99")
	if part.status != 206 || len(part.body) != 100 || part.header.Get("Content-Range") == "" {
		t.Fatalf("range: %d %d %v", part.status, len(part.body), part.header)
	}
	if cc := thumb.header.Get("Cache-Control"); cc != "public, max-age=300" {
		t.Fatalf("thumbnail Cache-Control %q (a chosen thumbnailTime remakes it)", cc)
	}
	// The animated preview: a looping WebP of several frames.
	anim := h.get(v["animatedPreviewUrl"].(string))
	if anim.status != 200 || anim.header.Get("Content-Type") != "image/webp" || !bytes.HasPrefix(anim.body, []byte("RIFF")) ||
		!bytes.Contains(anim.body[:64], []byte("ANIM")) || bytes.Count(anim.body, []byte("ANMF")) < 8 {
		t.Fatalf("animated preview: %d %v, %d bytes, %d frames", anim.status, anim.header, len(anim.body), bytes.Count(anim.body, []byte("ANMF")))
	}
	if audio := h.get(cdn + "/hls/audio/index.m3u8"); audio.status != 200 || !bytes.Contains(master.body, []byte(`TYPE=AUDIO`)) {
		t.Fatalf("shared audio rendition: %d\n%s", audio.status, master.body)
	}
	seg := h.get(cdn + "/hls/240p/seg_00000.m4s")
	if seg.status != 200 || seg.header.Get("Content-Type") != "video/iso.segment" {
		t.Fatalf("segment: %d %v", seg.status, seg.header)
	}
	rendition := h.get(cdn + "/hls/240p/index.m3u8")
	init := regexp.MustCompile(`#EXT-X-MAP:URI="(init(_[0-9]+)?\.mp4)"`).FindSubmatch(rendition.body)
	if init == nil {
		t.Fatalf("240p names no initialization segment:\n%s", rendition.body)
	}
	if r := h.get(cdn + "/hls/240p/" + string(init[1])); r.status != 200 || r.header.Get("Content-Type") != "video/mp4" || !bytes.Contains(r.body, []byte("moov")) {
		t.Fatalf("initialization segment: %d %v", r.status, r.header)
	}
	for _, p := range []string{"/", "/hls/", "/hls/240p/", "/original.mp4", "/../../projections.db", "/hls/../original.mp4", "/%2e%2e/projections.db"} {
		if r := h.get(cdn + p); r.status != 404 {
			t.Errorf("GET %s: %d, want 404", cdn+p, r.status)
		}
	}
	if r := h.get(h.m.CDNURL + "/../projections.db"); r.status != 404 {
		t.Errorf("traversal above the cdn: %d", r.status)
	}
	opt, _ := http.NewRequest("OPTIONS", v["playlistUrl"].(string), nil)
	opt.Header.Set("Origin", "http://player.example")
	opt.Header.Set("Access-Control-Request-Headers", "range")
	if resp, err := http.DefaultClient.Do(opt); err != nil || resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("preflight: %v %v", err, resp)
	}

	// The history tells the story.
	if got := videoEventTypes(t, h, id); !slices.Equal(got, []string{"UploadAccepted", "TranscodeStarted", "TranscodePlayable", "TranscodeSucceeded"}) {
		t.Fatalf("events %v", got)
	}

	// Deleting removes every file: the URLs answer 404.
	wantStatus(t, h.do("DELETE", "/v1/videos/"+id, key, nil), 200)
	for _, u := range []string{v["playlistUrl"].(string), v["thumbnailUrl"].(string), v["previewUrl"].(string)} {
		if r := h.get(u); r.status != 404 {
			t.Fatalf("%s after delete: %d", u, r.status)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("files remain after delete")
	}
}

func videoEventTypes(t *testing.T, h *harness, id string) []string {
	t.Helper()
	var types []string
	scan(t, h, []string{"video." + id + ".*"}, func(e domain.Event, _ []byte) { types = append(types, e.Type) })
	return types
}

func TestProcessingInputs(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	good := makeClip(t, "c.mp4", 320, 180, 1.5, true)
	truncated := good[:len(good)/2]
	// With the moov first, ffprobe still believes the cut file's 3 s.
	fast := remux(t, makeClip(t, "f.mp4", 320, 180, 3, true), "fast.mp4", "-movflags", "+faststart")
	faststartTruncated := fast[:len(fast)*45/100]
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(i*7919 + i/13)
	}
	copy(random, mp4Box) // past the upload's container check, to the transcoder
	tests := []struct {
		name, file string
		data       []byte
		want       domain.Status
		res        []string
	}{
		{"mkv", "clip.mkv", makeClip(t, "c.mkv", 320, 180, 1, true), domain.StatusCompleted, []string{"180p"}},
		{"webm", "clip.webm", makeClip(t, "c.webm", 320, 180, 1, true), domain.StatusCompleted, []string{"180p"}},
		{"no audio", "silent.mp4", makeClip(t, "s.mp4", 426, 240, 1, false), domain.StatusCompleted, []string{"240p"}},
		{"portrait phone video", "portrait.mov", rotated(t, makeClip(t, "p.mp4", 480, 270, 1, true), "p.mov"), domain.StatusCompleted, []string{"240p"}},
		{"random bytes", "random.mp4", random, domain.StatusFailed, nil},
		{"truncated mp4", "truncated.mp4", truncated, domain.StatusFailed, nil},
		{"truncated mp4 with its index first", "faststart.mp4", faststartTruncated, domain.StatusFailed, nil},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		ids[i] = h.uploadID(key, "main", tt.file, tt.data)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := h.waitStatus(key, ids[i], tt.want)
			if tt.want == domain.StatusFailed {
				msg, _ := v["errorMessage"].(string)
				if msg == "" || strings.Contains(msg, "ffmpeg") || strings.Contains(msg, "\n") || len(msg) > 200 {
					t.Fatalf("errorMessage %q: want one readable sentence", msg)
				}
				if v["playlistUrl"] != nil || v["progress"] != nil {
					t.Fatalf("failed video: %v", v)
				}
				return
			}
			var res []string
			for _, r := range v["resolutions"].([]any) {
				res = append(res, r.(string))
			}
			if !slices.Equal(res, tt.res) {
				t.Fatalf("resolutions %v, want %v", res, tt.res)
			}
			w, hgt := ffprobe(t, strings.Replace(v["playlistUrl"].(string), "master.m3u8", tt.res[0]+"/index.m3u8", 1)).video()
			if short := strconv.Itoa(min(w, hgt)) + "p"; short != tt.res[0] {
				t.Fatalf("%s decodes as %dx%d", tt.res[0], w, hgt)
			}
			if portrait := strings.Contains(tt.name, "portrait"); portrait != (w < hgt) {
				t.Fatalf("%s decodes as %dx%d: orientation lost", tt.name, w, hgt)
			}
		})
	}
	// A file that is not a video fails at once, without retries.
	if got := videoEventTypes(t, h, ids[4]); !slices.Equal(got, []string{"UploadAccepted", "TranscodeStarted", "TranscodeFailed"}) {
		t.Fatalf("random bytes events %v", got)
	}
}

// Transient failures are retried with backoff, then FAILED.
func TestTransientFailuresRetryThenFail(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder, func(c *Config) { c.Workers.Stall = time.Nanosecond })
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "c.mp4", clip(t))
	v := h.waitStatus(key, id, domain.StatusFailed)
	if msg := v["errorMessage"].(string); !strings.Contains(msg, "after 2 attempts") {
		t.Fatalf("errorMessage %q", msg)
	}
	want := []string{"UploadAccepted", "TranscodeStarted", "TranscodeFailed", "TranscodeStarted", "TranscodeFailed"}
	if got := videoEventTypes(t, h, id); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	h.waitJobsDone()
	if videos, work := h.mediaEntries(); len(work) != 0 || !slices.Equal(videos, []string{id}) {
		t.Fatalf("media after failure: %v %v", videos, work)
	}
}

// waitJobsDone waits until the transcoder has acknowledged every job: none
// left to move into the account queues, none waiting, running or backing off.
func (h *harness) waitJobsDone() {
	h.t.Helper()
	eventstoretest.EventuallyEvery(h.t, "every transcode job done", 20*time.Millisecond, func() (bool, string) {
		n, err := queue.New(h.m.store).JobsUnfinished(context.Background(), transcoder.Durable)
		if err != nil {
			h.t.Fatal(err)
		}
		return n == 0, fmt.Sprintf("%d unfinished", n)
	})
}

// waitConsumerDone waits until a work consumer has acknowledged every job.
func (h *harness) waitConsumerDone(stream, durable string) {
	h.t.Helper()
	eventstoretest.EventuallyEvery(h.t, "every "+durable+" job done", 20*time.Millisecond, func() (bool, string) {
		n, err := queue.New(h.m.store).Unfinished(context.Background(), stream, durable)
		if err != nil {
			h.t.Fatal(err)
		}
		return n == 0, fmt.Sprintf("%d unfinished", n)
	})
}

// waitProgress waits until ffmpeg has reported progress for the video.
func (h *harness) waitProgress(id string) {
	h.t.Helper()
	eventstoretest.EventuallyEvery(h.t, "progress reported", 5*time.Millisecond, func() (bool, string) {
		f, ok := h.m.progress.Get(id)
		return ok && f > 0, ""
	})
}

func TestDeleteDuringProcessing(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "long.mp4", makeClip(t, "long.mp4", 1280, 720, 3, true))
	h.waitProgress(id) // ffmpeg is running
	wantStatus(t, h.do("DELETE", "/v1/videos/"+id, key, nil), 200)
	h.waitJobsDone()
	if got := videoEventTypes(t, h, id); slices.Contains(got, domain.TypeTranscodeSucceeded) {
		t.Fatalf("deleted video completed: %v", got)
	}
	if videos, work := h.mediaEntries(); len(videos) != 0 || len(work) != 0 {
		t.Fatalf("files left after delete during processing: %v %v", videos, work)
	}
}

// A worker stopped mid-job hands it back; another finishes it, and the
// stream holds exactly one TranscodeSucceeded.
func TestWorkerStoppedMidJobAnotherFinishes(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir()) // no in-process transcoder: the test runs its own
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	newWorker := func() (*transcoder.Transcoder, context.CancelFunc, chan struct{}) {
		tc, err := transcoder.New(transcoder.Config{Store: h.m.store, Jobs: queue.New(h.m.store), Media: h.m.media, Progress: h.m.progress, Log: quiet,
			Backoff: []time.Duration{time.Millisecond}, Name: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = tc.Run(ctx) }()
		return tc, cancel, done
	}
	_, stopFirst, firstDone := newWorker()
	id := h.uploadID(key, "main", "long.mp4", makeClip(t, "long.mp4", 1280, 720, 3, true))
	h.waitProgress(id)
	stopFirst()
	<-firstDone
	if got := videoEventTypes(t, h, id); slices.Contains(got, domain.TypeTranscodeSucceeded) {
		t.Fatalf("first worker completed before it was stopped: %v", got)
	}
	_, stopSecond, secondDone := newWorker()
	defer func() { stopSecond(); <-secondDone }()
	h.waitStatus(key, id, domain.StatusCompleted)
	h.waitJobsDone()
	got := videoEventTypes(t, h, id)
	n := 0
	for _, e := range got {
		if e == domain.TypeTranscodeSucceeded {
			n++
		}
	}
	// An attempt may become playable (TranscodePlayable) before it stops,
	// or not: that is not what this test is about.
	got = slices.DeleteFunc(got, func(e string) bool { return e == domain.TypeTranscodePlayable })
	if n != 1 || !slices.Equal(got[:4], []string{"UploadAccepted", "TranscodeStarted", "TranscodeInterrupted", "TranscodeStarted"}) {
		t.Fatalf("events %v: want two starts with the interruption between them, and exactly one success", got)
	}
	if _, work := h.mediaEntries(); len(work) != 0 {
		t.Fatalf("work left: %v", work)
	}
}

// A worker that dies without a word (its NATS connection gone, no Nak)
// loses the job only for AckWait: the server redelivers it to another
// worker, which finishes it; the stream holds one TranscodeSucceeded.
func TestCrashedWorkerJobIsRedelivered(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	const ackWait = time.Second
	run := func(store *eventstore.Store) (context.CancelFunc, chan struct{}) {
		tc, err := transcoder.New(transcoder.Config{Store: store, Jobs: queue.New(store), Media: h.m.media, Progress: h.m.progress, Log: quiet,
			Backoff: []time.Duration{time.Millisecond}, AckWait: ackWait, Name: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = tc.Run(ctx) }()
		return cancel, done
	}
	doomed := eventstoretest.Open(t, h.nats, h.natsAuth) // the crashing worker's own connection
	stop, done := run(doomed)
	id := h.uploadID(key, "main", "long.mp4", makeClip(t, "long.mp4", 1280, 720, 3, true))
	h.waitProgress(id)
	doomed.Abort() // the process is gone: no Nak, no more heartbeats
	stop()
	<-done

	stop2, done2 := run(h.m.store)
	defer func() { stop2(); <-done2 }()
	h.waitStatus(key, id, domain.StatusCompleted)
	h.waitJobsDone()
	got := videoEventTypes(t, h, id)
	// The first attempt may have become playable before it died, or not.
	got = slices.DeleteFunc(got, func(e string) bool { return e == domain.TypeTranscodePlayable })
	if !slices.Equal(got, []string{"UploadAccepted", "TranscodeStarted", "TranscodeInterrupted", "TranscodeStarted", "TranscodeSucceeded"}) {
		t.Fatalf("events %v", got)
	}
	// The audit history shows the crash as such.
	r := h.do("GET", "/v1/videos/"+id+"/events", key, nil)
	wantStatus(t, r, 200)
	events := r.json(t)["events"].([]any)
	if ev := events[2].(map[string]any); ev["type"] != "TranscodeInterrupted" ||
		ev["data"].(map[string]any)["reason"] != "crash" || ev["data"].(map[string]any)["attempt"] != float64(1) {
		t.Errorf("audit history: %v, want the first attempt's crash", ev)
	}
}
