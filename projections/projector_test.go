package projections_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/projections"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// running starts a projector over db and stops it when the test ends (or
// when the returned stop is called).
// tempDB opens read models in a temporary file, closed when t ends.
func tempDB(t *testing.T) *projections.DB {
	t.Helper()
	db, err := projections.OpenDB(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func running(t *testing.T, db *projections.DB, s *eventstore.Store) (*projections.Projector, func()) {
	t.Helper()
	p, err := projections.NewProjector(db, s, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var stopped bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return p, stop
}

func waitFor(t *testing.T, p *projections.Projector, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func exec[S eventstore.Aggregate[S]](t *testing.T, s *eventstore.Store, id domain.StreamID, cmd any) uint64 {
	t.Helper()
	r, err := eventstore.Execute[S](context.Background(), s, id, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return r.LastSeq()
}

func upload(t *testing.T, s *eventstore.Store, account, coll string) (string, uint64) {
	t.Helper()
	id := s.NewID()
	seq := exec[domain.Video](t, s, domain.StreamID{Aggregate: domain.AggVideo, ID: id}, domain.AcceptUpload{
		Account: account, Collection: coll, CollectionName: coll, Filename: "clip.mp4", Size: 10,
	})
	return id, seq
}

func TestProjectorRestartResumesAtCheckpoint(t *testing.T) {
	s := eventstoretest.Run(t)
	path := filepath.Join(t.TempDir(), "projections.db")
	db, err := projections.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	p, stop := running(t, db, s)
	exec[domain.Collection](t, s, domain.CollectionStream("acme", "a"), domain.CreateCollection{Account: "acme", Slug: "a", Name: "A"})
	_, seq := upload(t, s, "acme", "a")
	waitFor(t, p, seq)
	stop()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// While no projector runs, more happens.
	_, seq = upload(t, s, "acme", "a")

	db, err = projections.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if cp, _ := db.Checkpoint(); cp != 2 {
		t.Fatalf("checkpoint after restart = %d, want 2", cp)
	}
	p, _ = running(t, db, s)
	waitFor(t, p, seq)
	c, ok, err := db.Collection("acme", "a")
	if err != nil || !ok {
		t.Fatalf("collection: %v %v", ok, err)
	}
	if c.VideoCount != 2 {
		t.Fatalf("video count %d, want 2: an event was applied twice or skipped", c.VideoCount)
	}
}

// A batch replayed over events already committed (a crash after the bbolt
// commit, before the consumer moved on) changes nothing.
func TestReplayedBatchIsNotAppliedTwice(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	exec[domain.Collection](t, s, domain.CollectionStream("acme", "a"), domain.CreateCollection{Account: "acme", Slug: "a", Name: "A"})
	upload(t, s, "acme", "a")
	upload(t, s, "acme", "a")

	if err := applyAll(db, s); err != nil { // first pass: everything, from 1
		t.Fatal(err)
	}
	// The second pass re-reads from sequence 2, as a consumer that lost its
	// position would, and must reach a new event past the checkpoint.
	_, want := upload(t, s, "acme", "a")
	p, err := projections.NewProjector(db, rewind{s}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitFor(t, p, want)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, _, _ := db.Collection("acme", "a")
	if c.VideoCount != 3 {
		t.Fatalf("video count %d, want 3: events below the checkpoint were applied again", c.VideoCount)
	}
}

// rewind ignores the checkpoint and always tails from sequence 2, the
// first upload (re-applying CollectionCreated would reset the count and
// hide a double count).
type rewind struct{ s *eventstore.Store }

func (r rewind) Tail(ctx context.Context, _ uint64, fn func(domain.Event, bool) error) error {
	return r.s.Tail(ctx, 2, fn)
}

func (r rewind) LastSeq(ctx context.Context) (uint64, error) { return r.s.LastSeq(ctx) }

// applyAll runs a projector until it has applied the whole stream.
func applyAll(db *projections.DB, s *eventstore.Store) error {
	last, err := s.LastSeq(context.Background())
	if err != nil {
		return err
	}
	p, err := projections.NewProjector(db, s, quiet)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	err = p.WaitFor(wctx, last)
	wcancel()
	cancel()
	return errors.Join(err, <-done)
}

func TestListNewestFirstWithFilters(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	p, _ := running(t, db, s)
	for _, slug := range []string{"a", "b"} {
		exec[domain.Collection](t, s, domain.CollectionStream("acme", slug), domain.CreateCollection{Account: "acme", Slug: slug, Name: slug})
	}
	exec[domain.Collection](t, s, domain.CollectionStream("other", "a"), domain.CreateCollection{Account: "other", Slug: "a", Name: "a"})
	var ids []string // in upload order
	for i := 0; i < 5; i++ {
		coll := "a"
		if i%2 == 1 {
			coll = "b"
		}
		id, _ := upload(t, s, "acme", coll)
		ids = append(ids, id)
	}
	upload(t, s, "other", "a")
	_, seq := upload(t, s, "acme-2", "a") // an account whose slug extends another's
	seq = exec[domain.Video](t, s, domain.StreamID{Aggregate: domain.AggVideo, ID: ids[2]}, domain.DeleteVideo{Account: "acme"})
	waitFor(t, p, seq)

	tests := []struct {
		name string
		f    projections.VideoQuery
		want []string
	}{
		{"all newest first", projections.VideoQuery{Limit: 50}, []string{ids[4], ids[3], ids[1], ids[0]}},
		{"limit", projections.VideoQuery{Limit: 2}, []string{ids[4], ids[3]}},
		{"offset", projections.VideoQuery{Limit: 2, Offset: 2}, []string{ids[1], ids[0]}},
		{"offset past end", projections.VideoQuery{Limit: 2, Offset: 9}, []string{}},
		{"collection", projections.VideoQuery{Collection: "a", Limit: 50}, []string{ids[4], ids[0]}},
		{"collection offset", projections.VideoQuery{Collection: "b", Limit: 50, Offset: 1}, []string{ids[1]}},
		{"status", projections.VideoQuery{Status: domain.StatusPending, Limit: 50}, []string{ids[4], ids[3], ids[1], ids[0]}},
		{"status none", projections.VideoQuery{Status: domain.StatusCompleted, Limit: 50}, []string{}},
		{"collection and status", projections.VideoQuery{Collection: "b", Status: domain.StatusPending, Limit: 50}, []string{ids[3], ids[1]}},
		{"unknown collection", projections.VideoQuery{Collection: "zzz", Limit: 50}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := db.QueryVideos("acme", tt.f)
			if err != nil {
				t.Fatal(err)
			}
			gotIDs := []string{}
			for _, v := range page.Videos {
				if v.Account != "acme" {
					t.Fatalf("video of account %s leaked", v.Account)
				}
				gotIDs = append(gotIDs, v.ID)
			}
			if len(gotIDs) != len(tt.want) {
				t.Fatalf("got %v, want %v", gotIDs, tt.want)
			}
			for i := range gotIDs {
				if gotIDs[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", gotIDs, tt.want)
				}
			}
		})
	}
	if _, ok, _ := db.Video(ids[2]); ok {
		t.Fatal("deleted video still readable")
	}
	if c, _, _ := db.Collection("acme", "a"); c.VideoCount != 2 {
		t.Fatalf("collection a holds %d, want 2", c.VideoCount)
	}
}

func TestWaitForHonoursContext(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	p, _ := running(t, db, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.WaitFor(ctx, 99); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestInterruptedTranscodeKeepsTheVideoProcessing: a TranscodeInterrupted
// (a shutdown, or a crash recorded with the next start) leaves the video
// PROCESSING and moves its updatedAt.
func TestInterruptedTranscodeKeepsTheVideoProcessing(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	p, _ := running(t, db, s)
	id, _ := upload(t, s, "acme", "c")
	video := domain.StreamID{Aggregate: domain.AggVideo, ID: id}
	exec[domain.Video](t, s, video, domain.StartTranscode{Worker: "w", MaxAttempts: 3})
	seq := exec[domain.Video](t, s, video, domain.InterruptTranscode{Reason: domain.InterruptShutdown})
	waitFor(t, p, seq)
	v, ok, err := db.Video(id)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	events, _, err := s.Load(context.Background(), video)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Type != domain.TypeTranscodeInterrupted || v.Status != domain.StatusProcessing || !v.UpdatedAt.Equal(last.OccurredAt) {
		t.Errorf("after %s: status %s, updatedAt %v; want PROCESSING at %v", last.Type, v.Status, v.UpdatedAt, last.OccurredAt)
	}
}

// A video is playable (has its playlistUrl) only while the attempt that
// published its growing playlist runs: a failed or interrupted attempt's
// playlist grows no more, and the next attempt starts another (otherwise
// the URL stays through the backoff, pointing at a dead playlist).
func TestPlayableEndsWithItsAttempt(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	p, _ := running(t, db, s)
	id, _ := upload(t, s, "acme", "c")
	video := domain.StreamID{Aggregate: domain.AggVideo, ID: id}
	playable := func(want bool) {
		t.Helper()
		v, ok, err := db.Video(id)
		if err != nil || !ok || v.Playable != want {
			t.Fatalf("playable %t, want %t (%v %v)", v.Playable, want, ok, err)
		}
	}
	for _, end := range []any{domain.FailTranscode{Reason: "Processing failed: x.", Final: false}, domain.InterruptTranscode{Reason: domain.InterruptCrash}} {
		exec[domain.Video](t, s, video, domain.StartTranscode{Worker: "w", MaxAttempts: 3})
		waitFor(t, p, exec[domain.Video](t, s, video, domain.MarkPlayable{Resolutions: []string{"240p"}}))
		playable(true)
		waitFor(t, p, exec[domain.Video](t, s, video, end))
		playable(false)
	}
}
