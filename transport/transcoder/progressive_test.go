package transcoder_test

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/hls"
	"github.com/kino-video/kino/transport/transcoder"
)

// TestProgressivePublishing: the ladder's segments and playlists reach the
// media store while the job runs (EVENT playlists that start at 0, no
// ENDLIST, the master), TranscodePlayable is recorded once, before
// TranscodeSucceeded, and the published playlists end VOD.
func TestProgressivePublishing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	var held atomic.Bool
	e := newEnv(t, func(c *transcoder.Config) {
		transcoder.SetEncodeHooks(c, nil, func(string) { held.Store(true); <-release })
	})
	acc := e.account("acme", domain.PlanFree)
	t.Cleanup(unblock) // a failure below must not leave the job held
	id := e.uploadFile(acc, "clip.mp4", ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 240, 10, true))

	// Held after the encode, before the outputs are checked and published:
	// the job has not ended, the video is PROCESSING.
	deadline := time.Now().Add(2 * time.Minute)
	for !held.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the encode never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	types := e.types(id)
	if !contains(types, domain.TypeTranscodePlayable) || contains(types, domain.TypeTranscodeSucceeded) {
		t.Fatalf("events while held: %v, want TranscodePlayable and no TranscodeSucceeded", types)
	}
	master := e.read(id, "hls/master.m3u8")
	for _, r := range []string{"240p", "audio"} {
		if !strings.Contains(master, r+"/index.m3u8") {
			t.Fatalf("master does not list %s:\n%s", r, master)
		}
		pl := e.read(id, path.Join("hls", r, "index.m3u8"))
		if !strings.Contains(pl, "#EXT-X-PLAYLIST-TYPE:EVENT\n") || !strings.Contains(pl, "#EXT-X-START:TIME-OFFSET=0\n") || strings.Contains(pl, "ENDLIST") {
			t.Fatalf("%s while processing:\n%s", r, pl)
		}
		segs := segments(pl)
		if len(segs) < 3 {
			t.Fatalf("%s lists %d segments of a 10 s clip", r, len(segs))
		}
		// Its fMP4 initialization segment, published whole before it.
		init := regexp.MustCompile(`(?m)^#EXT-X-MAP:URI="(init(_[0-9]+)?\.mp4)"$`).FindStringSubmatch(pl)
		if init == nil {
			t.Fatalf("%s while processing names no initialization segment:\n%s", r, pl)
		}
		if got := e.read(id, path.Join("hls", r, init[1])); !strings.Contains(got, "moov") {
			t.Fatalf("%s/%s while processing: %d bytes, no moov", r, init[1], len(got))
		}
		for _, s := range segs {
			if e.read(id, path.Join("hls", r, s)) == "" {
				t.Fatalf("%s/%s is empty", r, s)
			}
		}
	}
	unblock()

	if o := e.wait(id, 2*time.Minute); o.status != domain.StatusCompleted {
		t.Fatalf("ended %s: %s", o.status, o.reason)
	}
	for _, r := range []string{"240p", "audio"} {
		pl := e.read(id, path.Join("hls", r, "index.m3u8"))
		if !strings.Contains(pl, "#EXT-X-PLAYLIST-TYPE:VOD\n") || !strings.HasSuffix(pl, "#EXT-X-ENDLIST\n") || strings.Contains(pl, "EVENT") {
			t.Fatalf("%s once completed:\n%s", r, pl)
		}
	}
	// Once completed, the master tells what each rung carries: its peak
	// segment bit rate and its average, the audio's added (RFC 8216
	// 4.3.4.2), not the encoder's cap.
	final, err := hls.ParseMaster([]byte(e.read(id, "hls/master.m3u8")))
	if err != nil {
		t.Fatal(err)
	}
	audioPeak, audioAvg := segmentRates(t, e, id, "audio")
	for _, v := range final.Variants {
		peak, avg := segmentRates(t, e, id, path.Dir(v.URI))
		bw, _ := v.Attrs.Get("BANDWIDTH")
		avgBW, _ := v.Attrs.Get("AVERAGE-BANDWIDTH")
		// The peak is over runs of segments (hls.MediaRates): at least the
		// average, at most the largest single segment's.
		if n, _ := strconv.Atoi(bw); n < avg+audioAvg || n > peak+audioPeak || avgBW != strconv.Itoa(avg+audioAvg) {
			t.Errorf("%s: BANDWIDTH=%s AVERAGE-BANDWIDTH=%s, want the measured %d (peak at most %d)", v.URI, bw, avgBW, avg+audioAvg, peak+audioPeak)
		}
	}
	types = e.types(id)
	playable, succeeded := -1, -1
	for i, typ := range types {
		switch typ {
		case domain.TypeTranscodePlayable:
			if playable >= 0 {
				t.Fatalf("TranscodePlayable twice: %v", types)
			}
			playable = i
		case domain.TypeTranscodeSucceeded:
			succeeded = i
		}
	}
	if playable < 0 || playable > succeeded {
		t.Fatalf("events %v: want one TranscodePlayable before TranscodeSucceeded", types)
	}
	if left := e.workDirs(); len(left) != 0 {
		t.Fatalf("work directories left: %v", left)
	}
}

// segmentRates measures the published rendition r of video id: its
// largest segment's bits over its duration, and all its bits over all its
// seconds, in bits per second, rounded up.
func segmentRates(t *testing.T, e *env, id, r string) (peak, avg int) {
	t.Helper()
	pl, err := hls.ParseMedia([]byte(e.read(id, path.Join("hls", r, "index.m3u8"))))
	if err != nil {
		t.Fatal(err)
	}
	var bits, secs float64
	for _, s := range pl.Segments {
		n := float64(len(e.read(id, path.Join("hls", r, s.URI)))) * 8
		peak = max(peak, int(math.Ceil(n/s.Duration)))
		bits, secs = bits+n, secs+s.Duration
	}
	return peak, int(math.Ceil(bits / secs))
}

// TestProgressiveShortAudio: a video whose audio ends long before its
// video is playable while processing: the rungs decide, once the audio
// has begun (otherwise its audio playlist, which stops growing at its end,
// holds the video back until it completes).
func TestProgressiveShortAudio(t *testing.T) {
	t.Parallel()
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	e := newEnv(t, func(c *transcoder.Config) {
		transcoder.SetEncodeHooks(c, nil, func(string) { close(held); <-release })
	})
	acc := e.account("acme", domain.PlanFree)
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	clip := filepath.Join(t.TempDir(), "short-audio.mp4")
	// A third of a second of audio: what its playlist holds over the time
	// the 20 s encode takes is far below real time.
	ffmpegtest.Run(t, "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=20",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=0.3",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", clip)
	id := e.uploadFile(acc, "short-audio.mp4", clip)
	select {
	case <-held: // the encode is over, its outputs not yet checked
	case <-time.After(2 * time.Minute):
		t.Fatal("the encode never ended")
	}
	if types := e.types(id); !contains(types, domain.TypeTranscodePlayable) || contains(types, domain.TypeTranscodeSucceeded) {
		t.Fatalf("events once encoded: %v, want TranscodePlayable (the video plays) and no TranscodeSucceeded yet", types)
	}
	once.Do(func() { close(release) })
	if o := e.wait(id, 2*time.Minute); o.status != domain.StatusCompleted {
		t.Fatalf("ended %s: %s", o.status, o.reason)
	}
}

// TestProgressiveThenDelete: a video deleted while its early segments are
// being published keeps nothing: no file under its directory, no work
// directory, no publisher writing after the delete.
func TestProgressiveThenDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acc := e.account("acme", domain.PlanFree)
	// The encode outlasts the test's wait for its first published segment.
	id := e.uploadFile(acc, "long.mkv", longClip(t, "long.mkv", 300))
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := e.media.Open(context.Background(), id, "hls/180p/index.m3u8"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing published early")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if contains(e.types(id), domain.TypeTranscodeSucceeded) {
		t.Fatal("the encode ended before the test could delete it mid-way")
	}
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(id), domain.DeleteVideo{Account: acc}); err != nil {
		t.Fatal(err)
	}
	if err := e.media.Remove(context.Background(), id); err != nil { // as the API does
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		n, err := queue.New(e.store).Unfinished(context.Background(), "", transcoder.Durable)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && len(e.workDirs()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the delete: work dirs %v, %d jobs unfinished", e.workDirs(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(e.media.Root(), id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("video directory: %v (holding %v), want removed", err, e.outputs(id))
	}
}

func (e *env) types(id string) []string {
	e.t.Helper()
	events, _, err := e.store.Load(context.Background(), stream(id))
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		out = append(out, ev.Type)
	}
	return out
}

func (e *env) read(id, rel string) string {
	e.t.Helper()
	f, err := e.media.Open(context.Background(), id, rel)
	if err != nil {
		e.t.Fatalf("%s: %v", rel, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func segments(playlist string) []string {
	var out []string
	for l := range strings.Lines(playlist) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
