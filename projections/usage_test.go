package projections_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/projections"
)

// Per-account usage follows uploads, transcodes and deletes event by
// event, and a rebuild (any batching) and a verify find the same numbers.
func TestUsageCountsVideosAndStorageAndSurvivesRebuild(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	p, _ := running(t, db, s)
	ctx := context.Background()
	video := func(id string) domain.StreamID { return domain.StreamID{Aggregate: domain.AggVideo, ID: id} }
	a, _ := upload(t, s, "acme", "main")      // stays PENDING: 10 bytes
	b, _ := upload(t, s, "acme", "main")      // COMPLETED: 10 + 1000
	c, _ := upload(t, s, "acme", "main")      // FAILED: 10
	d, _ := upload(t, s, "acme", "main")      // deleted
	other, _ := upload(t, s, "other", "main") // another account: deleted, leaving no record
	exec[domain.Video](t, s, video(b), domain.StartTranscode{Worker: "w"})
	exec[domain.Video](t, s, video(b), domain.CompleteTranscode{Duration: 1, Width: 2, Height: 2, Resolutions: []string{"360p"}, ProcessedSize: 1000})
	exec[domain.Video](t, s, video(c), domain.StartTranscode{Worker: "w"})
	exec[domain.Video](t, s, video(c), domain.FailTranscode{Reason: "broken", Final: true})
	exec[domain.Video](t, s, video(d), domain.DeleteVideo{Account: "acme"})
	seq := exec[domain.Video](t, s, video(other), domain.DeleteVideo{Account: "other"})
	waitFor(t, p, seq)
	_ = a

	want := projections.Usage{Pending: 1, Completed: 1, Failed: 1, StorageBytes: 10 + 1010 + 10}
	check := func(when string) {
		t.Helper()
		u, err := db.Usage("acme")
		if err != nil {
			t.Fatal(err)
		}
		if u != want {
			t.Fatalf("%s: usage of acme = %+v, want %+v", when, u, want)
		}
		if u, err := db.Usage("other"); err != nil || u != (projections.Usage{}) {
			t.Fatalf("%s: usage of other = %+v, %v; want zero", when, u, err)
		}
	}
	check("live")
	diffs, _, err := p.Verify(ctx, 10, func(projections.Progress) {})
	if err != nil || len(diffs) != 0 {
		t.Fatalf("verify: %v %v", diffs, err)
	}
	if _, err := p.Rebuild(ctx, func(projections.Progress) {}); err != nil {
		t.Fatal(err)
	}
	check("after a rebuild")
}

// A read-model file written before usage was kept gets it counted from
// its videos when opened.
func TestUsageBackfilledFromAnOlderFile(t *testing.T) {
	s := eventstoretest.Run(t)
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := projections.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	p, stop := running(t, db, s)
	_, seq := upload(t, s, "acme", "main")
	waitFor(t, p, seq)
	stop()
	if err := projections.DropBucketForTest(db, "usage"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = projections.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if u, err := db.Usage("acme"); err != nil || u != (projections.Usage{Pending: 1, StorageBytes: 10}) {
		t.Fatalf("usage = %+v, %v", u, err)
	}
}
