package transcoder_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/transcoder"
)

// damage is how a test spoils an attempt's outputs after ffmpeg, as a
// full disk does (ffmpeg's HLS muxer exits 0 when its writes fail).
type damage func(t *testing.T, work string)

func truncate(name string) damage {
	return func(t *testing.T, work string) {
		if err := os.Truncate(filepath.Join(work, name), 0); err != nil {
			t.Error(err)
		}
	}
}

func remove(name string) damage {
	return func(t *testing.T, work string) {
		if err := os.Remove(filepath.Join(work, name)); err != nil {
			t.Error(err)
		}
	}
}

// cutPlaylist keeps a playlist's header and drops its segment lines, as a
// write cut short after its first bytes leaves it.
func cutPlaylist(name string) damage {
	return func(t *testing.T, work string) {
		p := filepath.Join(work, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			return
		}
		i := strings.Index(string(data), "#EXTINF")
		if i < 0 {
			t.Errorf("%s lists no segment to cut: %s", name, data)
			return
		}
		if err := os.WriteFile(p, data[:i], 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestShortWritesAreNotCompleted: outputs written short (an empty master
// or rendition playlist, an empty or missing segment, a cut playlist, an
// empty thumbnail or preview) are caught before anything is published: the
// attempt is a transient failure, and the video ends FAILED with a message
// that says so, never COMPLETED (its one attempt here). Damaged once, it
// is retried and ends COMPLETED. Every kind of damage is applied to a copy
// of one attempt's whole outputs and put to the check each attempt runs
// after ffmpeg (transcoder.VerifyOutputs); two of them go through the
// whole pipeline, which turns any failed check into the same end.
func TestShortWritesAreNotCompleted(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	byID := map[string]damage{}
	left := map[string]int{}
	pristine := filepath.Join(t.TempDir(), "pristine") // the first damaged attempt's outputs, before the damage
	attempts := func(n int) func(*transcoder.Config) {
		return func(c *transcoder.Config) {
			c.MaxAttempts = n
			transcoder.SetEncodeHooks(c, nil, func(work string) {
				mu.Lock()
				defer mu.Unlock()
				for id, d := range byID {
					if strings.HasPrefix(filepath.Base(work), id+"-") && left[id] != 0 {
						if _, err := os.Stat(pristine); errors.Is(err, os.ErrNotExist) {
							if err := os.CopyFS(pristine, os.DirFS(work)); err != nil {
								t.Error(err) // in the transcoder's goroutine: no Fatal
							}
						}
						left[id]--
						d(t, work)
					}
				}
			})
		}
	}
	single, retrying := newEnv(t, attempts(1)), newEnv(t, attempts(2))
	// One segment a rung (1 s, of a 4 s segment) is enough: each case
	// damages one file, and its preview (some 25 KB) is still far over
	// the 2000 bytes it is cut to.
	clip := ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 1, true)
	failing := single.uploadFile(single.account("acme", domain.PlanFree), "clip.mp4", clip)
	retried := retrying.uploadFile(retrying.account("acme", domain.PlanFree), "clip.mp4", clip)
	mu.Lock()
	byID[failing], left[failing] = truncate("hls/180p/seg_00000.m4s"), -1 // every attempt
	byID[retried], left[retried] = truncate("hls/master.m3u8"), 1
	mu.Unlock()

	got := single.wait(failing, 2*time.Minute)
	want := "Processing failed after 1 attempt: its outputs could not be written in full."
	if got.status != domain.StatusFailed || got.reason != want || got.attempts != 1 {
		t.Errorf("damaged on every attempt: %+v, want FAILED after its attempt: %q", got, want)
	}
	if out := single.outputsLeft(failing); len(out) > 0 {
		t.Errorf("damaged on every attempt: published %v", out)
	}
	if got := retrying.wait(retried, 2*time.Minute); got.status != domain.StatusCompleted || got.attempts != 2 {
		t.Errorf("damaged once, then fine: %+v, want COMPLETED on attempt 2", got)
	}
	for _, e := range []*env{single, retrying} {
		if left := e.workDirs(); len(left) > 0 {
			t.Errorf("work directories left: %v", left)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	rungs := []string{"180p"}
	if err := transcoder.VerifyOutputs(pristine, rungs, true); err != nil {
		t.Fatalf("the outputs before any damage: %v", err)
	}
	for _, tt := range []struct {
		name   string
		damage damage
	}{
		{"empty master playlist", truncate("hls/master.m3u8")},
		{"empty rendition playlist", truncate("hls/180p/index.m3u8")},
		{"playlist cut before its segments", cutPlaylist("hls/180p/index.m3u8")},
		{"empty segment", truncate("hls/180p/seg_00000.m4s")},
		{"missing segment", remove("hls/audio/seg_00000.m4s")},
		{"missing initialization segment", remove("hls/180p/init_1.mp4")},
		{"a key named in a playlist", func(t *testing.T, work string) {
			p := filepath.Join(work, "hls", "180p", "index.m3u8")
			data, err := os.ReadFile(p)
			if err == nil {
				data = []byte(strings.Replace(string(data), "#EXTINF", `#EXT-X-KEY:METHOD=AES-128,URI="https://example.com/key"`+"\n#EXTINF", 1))
				err = os.WriteFile(p, data, 0o644)
			}
			if err != nil {
				t.Error(err)
			}
		}},
		{"empty thumbnail", truncate("thumbnail.jpg")},
		{"preview cut short", func(t *testing.T, work string) {
			if err := os.Truncate(filepath.Join(work, "preview.mp4"), 2000); err != nil {
				t.Error(err)
			}
		}},
	} {
		work := t.TempDir()
		if err := os.CopyFS(work, os.DirFS(pristine)); err != nil {
			t.Fatal(err)
		}
		tt.damage(t, work)
		if err := transcoder.VerifyOutputs(work, rungs, true); err == nil {
			t.Errorf("%s: the outputs pass the check", tt.name)
		}
	}
}

// A failed attempt takes its progress with it: between attempts (the
// backoff may be minutes) the video shows none, not the 1 its last attempt
// reached before its outputs failed the checks.
func TestFailedAttemptClearsItsProgress(t *testing.T) {
	t.Parallel()
	var id string
	var progress *kv.Progress
	var mu sync.Mutex // guards id and progress, which the hook reads
	seen := make(chan float64, 1)
	hook := func(work string) {
		mu.Lock()
		defer mu.Unlock()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if r, ok := progress.Live(id); ok {
				seen <- r.Progress
				break
			}
			if time.Now().After(deadline) {
				t.Error("no progress reported during the encode")
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		truncate("hls/master.m3u8")(t, work)
	}
	e := newEnv(t, func(c *transcoder.Config) {
		c.MaxAttempts = 2
		c.Backoff = []time.Duration{time.Hour}
		transcoder.SetEncodeHooks(c, nil, hook)
	})
	p := e.followProgress(t)
	mu.Lock()
	progress = p
	mu.Unlock()
	clip := ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 3, true)
	mu.Lock()
	id = e.uploadFile(e.account("acme", domain.PlanFree), "clip.mp4", clip)
	mu.Unlock()
	t.Logf("progress during the failing attempt: %v", <-seen)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, ok := progress.Live(id); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed attempt's progress is still shown")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The failure is recorded once the attempt is over, which may be just
	// after its progress went: read until it is.
	var v domain.Video
	eventstoretest.EventuallyEvery(t, "the failed attempt recorded", 20*time.Millisecond, func() (bool, string) {
		events, _, err := e.store.Load(context.Background(), stream(id))
		if err != nil {
			t.Fatal(err)
		}
		v = domain.Fold[domain.Video](events)
		return v.Failures > 0, fmt.Sprintf("%s with %d failures", v.Status, v.Failures)
	})
	if v.Status != domain.StatusProcessing || v.Failures != 1 {
		t.Fatalf("between attempts: %s with %d failures, want PROCESSING with 1", v.Status, v.Failures)
	}
}

// TestFullDiskIsNotCompleted: when the disk fills up under the HLS
// ladder (a tmpfs too small for it, mounted over the work directory's
// hls/: ffmpeg meets a real ENOSPC, exits 0 and leaves empty playlists),
// the video ends FAILED, not COMPLETED with empty playlists, and nothing
// is published.
func TestFullDiskIsNotCompleted(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var mountErr error
	owner := "" // set before the transcoder starts
	mount := func(work string) {
		hls := filepath.Join(work, "hls")
		err := os.Mkdir(hls, 0o755)
		if err == nil {
			err = syscall.Mount("tmpfs", hls, "tmpfs", 0, "size=64k,mode=0755"+owner)
		}
		mu.Lock()
		mountErr = errors.Join(mountErr, err)
		mu.Unlock()
	}
	unmount := func(work string) {
		// What ffmpeg left stays; the file system goes (a real disk would
		// stay full, and the work directory must come off it).
		hls := filepath.Join(work, "hls")
		keep := filepath.Join(t.TempDir(), "hls")
		if err := os.CopyFS(keep, os.DirFS(hls)); err != nil {
			t.Error(err)
		}
		if err := syscall.Unmount(hls, syscall.MNT_DETACH); err != nil {
			t.Error(err)
		}
		if err := os.CopyFS(hls, os.DirFS(keep)); err != nil {
			t.Error(err)
		}
	}
	e := newEnv(t, func(c *transcoder.Config) {
		c.MaxAttempts = 2
		if c.User != nil {
			owner = fmt.Sprintf(",uid=%d,gid=%d", c.User.UID, c.User.GID)
		}
		transcoder.SetEncodeHooks(c, mount, unmount)
	})
	// A segment of 360p alone (4 s at 800 kbit/s) is six times the tmpfs.
	clip := ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 640, 360, 4, true)
	id := e.uploadFile(e.account("acme", domain.PlanFree), "clip.mp4", clip)
	got := e.wait(id, 2*time.Minute)
	mu.Lock()
	if mountErr != nil {
		mu.Unlock()
		t.Skipf("cannot mount a tmpfs (needs root with CAP_SYS_ADMIN): %v", mountErr)
	}
	mu.Unlock()
	want := "Processing failed after 2 attempts: its outputs could not be written in full."
	if got.status != domain.StatusFailed || got.reason != want {
		t.Errorf("on a full disk: %+v, want FAILED: %q", got, want)
	}
	if out := e.outputsLeft(id); len(out) > 0 {
		t.Errorf("published %v", out)
	}
}

// node is one transcoding process of a multi-process test: its own NATS
// connection and transcoder.
type node struct {
	store *eventstore.Store
	stop  func() // cancels Run and waits for it
}

func startNode(t *testing.T, e *env, url string, auth eventstore.Auth, configure func(*transcoder.Config)) *node {
	t.Helper()
	store, err := eventstore.Open(context.Background(), eventstore.Config{URL: url, Auth: auth, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	progress, err := kv.OpenProgress(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	cfg := transcoder.Config{Store: store, Jobs: queue.New(store), Media: e.media, Progress: progress, Log: quiet,
		Backoff: []time.Duration{50 * time.Millisecond}, User: e.user, Limits: ffmpeg.DefaultRLimits()}
	if configure != nil {
		configure(&cfg)
	}
	tc, err := transcoder.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tc.Run(ctx) }()
	var once sync.Once
	n := &node{store: store, stop: func() { once.Do(func() { cancel(); <-done; _ = store.Close() }) }}
	t.Cleanup(n.stop)
	return n
}

// waitRunning waits until a process (ffprobe or ffmpeg) works in one of
// video id's work directories: its attempt has started.
func waitRunning(t *testing.T, e *env, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(processesIn(t, filepath.Join(e.media.Root(), ".work"), id)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no attempt started on %s", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// videoEvents lists the types of a video's Transcode events, with the
// reason of each TranscodeInterrupted.
func videoEvents(t *testing.T, store *eventstore.Store, id string) []string {
	t.Helper()
	events, _, err := store.Load(context.Background(), stream(id))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case domain.TranscodeInterrupted:
			out = append(out, "Interrupted:"+d.Reason)
		case domain.TranscodeStarted:
			out = append(out, "Started")
		case domain.TranscodeSucceeded:
			out = append(out, "Succeeded")
		case domain.TranscodeFailed:
			out = append(out, "Failed")
		}
	}
	return out
}

// TestGracefulStopHandsTheJobBack: a transcoder stopped mid-job (SIGTERM)
// hands the job back, and the next transcoder takes it at once, not after
// AckWait (10 minutes here: finishing within the test's deadline proves
// it): another process on the same NATS, and the same node restarted with
// its embedded NATS server. The interruption is recorded as a shutdown,
// not as a failed attempt.
func TestGracefulStopHandsTheJobBack(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		name := "another node takes it"
		if restart {
			name = "the node restarted with its embedded NATS takes it"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			natsDir := t.TempDir()
			srv, err := natsserver.StartEmbedded(natsDir, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Shutdown() })
			e := &env{t: t}
			e.store = eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
			setupMedia(t, e)
			if _, err := kv.OpenProgress(context.Background(), e.store); err != nil { // made by kino serve
				t.Fatal(err)
			}
			long := func(c *transcoder.Config) { c.AckWait = 10 * time.Minute; c.MaxAttempts = 1 }
			first := startNode(t, e, srv.URL(), srv.Auth(eventstore.RoleWorker), long)
			// Long enough to be under way when the node stops.
			id := e.uploadFile(e.account("acme", domain.PlanFree), "clip.mp4", longClip(t, "clip.mp4", 30))
			waitRunning(t, e, id)
			first.stop()

			if restart {
				_ = e.store.Close()
				srv.Shutdown()
				if srv, err = natsserver.StartEmbedded(natsDir, "127.0.0.1:0"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { srv.Shutdown() })
				e.store = eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
				if _, err := kv.OpenProgress(context.Background(), e.store); err != nil { // in memory: made again
					t.Fatal(err)
				}
			}
			startNode(t, e, srv.URL(), srv.Auth(eventstore.RoleWorker), long)
			if got := e.wait(id, 2*time.Minute); got.status != domain.StatusCompleted {
				t.Fatalf("%+v, want COMPLETED", got)
			}
			want := []string{"Started", "Interrupted:shutdown", "Started", "Succeeded"}
			if got := videoEvents(t, e.store, id); !slices.Equal(got, want) {
				t.Errorf("events %v, want %v", got, want)
			}
		})
	}
}

// TestCrashesDoNotUseUpAttempts: a worker that dies holding the job (its
// NATS connection gone without a word, ffmpeg gone) four times in a row,
// with two attempts allowed, does not fail the video: each redelivery
// records the crash and the fifth attempt completes it.
func TestCrashesDoNotUseUpAttempts(t *testing.T) {
	t.Parallel()
	srv := eventstoretest.Server(t, t.TempDir())
	e := &env{t: t}
	e.store = eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	setupMedia(t, e)
	if _, err := kv.OpenProgress(context.Background(), e.store); err != nil { // made by kino serve
		t.Fatal(err)
	}
	cfg := func(c *transcoder.Config) { c.AckWait, c.MaxAttempts = time.Second, 2 }
	id := e.uploadFile(e.account("acme", domain.PlanFree), "clip.mp4",
		ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 20, false))
	const crashes = 4
	for range crashes {
		n := startNode(t, e, srv.URL(), srv.Auth(eventstore.RoleWorker), cfg)
		waitRunning(t, e, id)
		n.store.Abort() // the process is gone: no word to NATS, no heartbeat
		n.stop()
	}
	startNode(t, e, srv.URL(), srv.Auth(eventstore.RoleWorker), cfg)
	if got := e.wait(id, 2*time.Minute); got.status != domain.StatusCompleted {
		t.Fatalf("after %d crashes: %+v, want COMPLETED", crashes, got)
	}
	var want []string
	for range crashes {
		want = append(want, "Started", "Interrupted:crash")
	}
	want = append(want, "Started", "Succeeded")
	if got := videoEvents(t, e.store, id); !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// When the media bucket's NATS goes away while an attempt publishes its
// outputs, the attempt is an interruption (TranscodeInterrupted, reason
// outage), not a failure: with one attempt allowed the video is not
// FAILED, and the job waits for NATS to come back.
func TestMediaOutageIsAnInterruption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mediaSrv := eventstoretest.Server(t, t.TempDir())
	obj, err := objects.Open(ctx, eventstoretest.Open(t, mediaSrv.URL(), mediaSrv.Auth(eventstore.RoleServe)))
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	for _, d := range []string{scratch, filepath.Dir(scratch)} {
		if err := os.Chmod(d, 0o711); err != nil { // ffmpeg's user passes through
			t.Fatal(err)
		}
	}
	bucket, err := media.OpenBucket(obj, scratch, 0)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	e := newEnv(t, func(c *transcoder.Config) {
		c.Media, c.MaxAttempts = bucket, 1
		transcoder.SetEncodeHooks(c, nil, func(string) { once.Do(mediaSrv.Shutdown) })
	})
	acc := e.account("acme", domain.PlanFree)

	clip := ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 1, false)
	data, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	f, err := bucket.Incoming()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	id := e.store.NewID()
	if err := bucket.Commit(ctx, f.Name(), id, ".mp4"); err != nil {
		t.Fatal(err)
	}
	if _, err := eventstore.Execute[domain.Video](ctx, e.store, stream(id), domain.AcceptUpload{
		Account: acc, Collection: "c", CollectionName: "C", Filename: "clip.mp4", Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		events, _, err := e.store.Load(ctx, stream(id))
		if err != nil {
			t.Fatal(err)
		}
		interrupted := false
		for _, ev := range events {
			switch d := ev.Data.(type) {
			case domain.TranscodeFailed:
				t.Fatalf("the media outage failed the video: %+v", d)
			case domain.TranscodeInterrupted:
				interrupted = interrupted || d.Reason == domain.InterruptOutage
			}
		}
		if interrupted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TranscodeInterrupted (outage) after 2m: %d events", len(events))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
