package transcoder_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/transcoder"
)

// env is a running transcoder on real NATS, real ffmpeg and a media
// directory in a temp dir. When the tests run as root, ffmpeg runs as
// nobody, as `kino serve` runs it, with the default resource limits.
type env struct {
	t     *testing.T
	store *eventstore.Store
	media *media.Dir
	base  string // holds media/ and anything a test puts beside it
	user  *ffmpeg.User
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newEnv(t *testing.T, configure ...func(*transcoder.Config)) *env {
	t.Helper()
	ctx := context.Background()
	store := eventstoretest.Run(t)
	e := &env{t: t, store: store}
	setupMedia(t, e)
	progress, err := kv.OpenProgress(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	cfg := transcoder.Config{
		Store: store, Jobs: queue.New(store), Media: e.media, Progress: progress, Log: quiet,
		Backoff: []time.Duration{50 * time.Millisecond},
		User:    e.user, Limits: ffmpeg.DefaultRLimits(),
	}
	for _, c := range configure {
		c(&cfg)
	}
	tc, err := transcoder.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tc.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("transcoder: %v", err)
		}
	})
	return e
}

// setupMedia gives e a media directory in a temp dir and, when the tests
// run as root, ffmpeg's user (nobody).
func setupMedia(t *testing.T, e *env) {
	t.Helper()
	base := t.TempDir()
	e.base = base
	if os.Geteuid() == 0 {
		u, err := ffmpeg.LookupUser("nobody")
		if err != nil {
			t.Fatal(err)
		}
		e.user = u
		// go test makes its temp dirs 0700; nobody must pass through
		// them to reach its work directory (kino checks this at start).
		for _, d := range []string{base, filepath.Dir(base)} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	m, err := media.OpenDir(filepath.Join(base, "media"))
	if err != nil {
		t.Fatal(err)
	}
	e.media = m
}

// followProgress follows every worker's progress reports until the test
// ends, as an API node does.
func (e *env) followProgress(t *testing.T) *kv.Progress {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	progress, err := kv.OpenProgress(ctx, e.store)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = progress.Follow(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return progress
}

func (e *env) account(slug string, plan domain.Plan) string {
	e.t.Helper()
	_, err := eventstore.Execute[domain.Account](context.Background(), e.store,
		domain.StreamID{Aggregate: domain.AggAccount, ID: slug}, domain.CreateAccount{Slug: slug, Plan: plan})
	if err != nil {
		e.t.Fatal(err)
	}
	return slug
}

// upload stores data as an upload named filename of account, as the API
// does, and returns the video's id.
func (e *env) upload(account, filename string, data []byte) string {
	e.t.Helper()
	return e.uploadData(account, filename, data, false)
}

// uploadData is upload with the upload's download wish.
func (e *env) uploadData(account, filename string, data []byte, download bool) string {
	e.t.Helper()
	ext, err := domain.Extension(filename)
	if err != nil {
		e.t.Fatal(err)
	}
	f, err := e.media.Incoming()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		e.t.Fatal(err)
	}
	f.Close()
	id := e.store.NewID()
	if err := e.media.Commit(context.Background(), f.Name(), id, ext); err != nil {
		e.t.Fatal(err)
	}
	_, err = eventstore.Execute[domain.Video](context.Background(), e.store, stream(id), domain.AcceptUpload{
		Account: account, Collection: "c", CollectionName: "C", Filename: filename, Size: int64(len(data)), Download: download})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *env) uploadFile(account, filename, path string) string {
	e.t.Helper()
	return e.uploadAsking(account, filename, path, false)
}

// uploadAsking is uploadFile with the upload's download wish.
func (e *env) uploadAsking(account, filename, path string, download bool) string {
	e.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.uploadData(account, filename, data, download)
}

func stream(id string) domain.StreamID { return domain.StreamID{Aggregate: domain.AggVideo, ID: id} }

// outcome is how a video's processing ended.
type outcome struct {
	status   domain.Status
	reason   string  // of the final TranscodeFailed
	attempts int     // TranscodeStarted events
	duration float64 // of the TranscodeSucceeded
}

// wait polls the video's events until processing ended, for at most
// within; the bound is what the test claims ("seconds, not minutes").
func (e *env) wait(id string, within time.Duration) outcome {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		events, _, err := e.store.Load(context.Background(), stream(id))
		if err != nil {
			e.t.Fatal(err)
		}
		var o outcome
		for _, ev := range events {
			switch d := ev.Data.(type) {
			case domain.TranscodeStarted:
				o.attempts++
			case domain.TranscodeSucceeded:
				o.status, o.duration = domain.StatusCompleted, d.Duration
			case domain.TranscodeFailed:
				if d.Final {
					o.status, o.reason = domain.StatusFailed, d.Reason
				}
			}
		}
		if o.status != "" {
			return o
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("video %s still processing after %s (%d attempts)", id, within, o.attempts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outputs lists what the video's directory holds besides its original.
func (e *env) outputs(id string) []string {
	e.t.Helper()
	dir, err := e.media.Dir(id)
	if err != nil {
		e.t.Fatal(err)
	}
	var found []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if rel, _ := filepath.Rel(dir, path); !strings.HasPrefix(rel, "original") {
			found = append(found, rel)
		}
		return nil
	})
	return found
}

// outputsLeft waits, for at most 30 s, until nothing of video id but its
// original is published, and returns what is left: what an attempt
// published early goes just after its video is recorded FAILED, so a test
// that saw FAILED may look a moment before it goes.
func (e *env) outputsLeft(id string) []string {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := e.outputs(id)
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workDirs lists the attempt directories left under media/.work.
func (e *env) workDirs() []string {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.media.Root(), ".work"))
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	return names
}

// longClip writes a seconds long (a multiple of 10) 320x180 clip without
// audio (ffmpegtest.LongClip) in a test directory.
func longClip(t *testing.T, name string, seconds int) string {
	t.Helper()
	return ffmpegtest.LongClip(t, t.TempDir(), name, seconds)
}
