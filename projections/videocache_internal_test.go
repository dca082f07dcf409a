package projections

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// following runs a projector over a fresh stream until the test ends; exec
// executes a command on a collection or a video and waits until the read
// models include it.
func following(t *testing.T) (s *eventstore.Store, db *DB, exec func(domain.StreamID, any) uint64) {
	s, db, p := newFollower(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		<-done
	})
	return s, db, func(id domain.StreamID, cmd any) uint64 {
		t.Helper()
		var seq uint64
		var err error
		if id.Aggregate == domain.AggCollection {
			var r eventstore.Result[domain.Collection]
			r, err = eventstore.Execute[domain.Collection](context.Background(), s, id, cmd)
			seq = r.LastSeq()
		} else {
			var r eventstore.Result[domain.Video]
			r, err = eventstore.Execute[domain.Video](context.Background(), s, id, cmd)
			seq = r.LastSeq()
		}
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.WaitFor(wctx, seq); err != nil {
			t.Fatal(err)
		}
		return seq
	}
}

// Video answers from its cache once a record has been read, and never
// answers what later events changed: once the read models include a
// transcode's start, a collection's rename (which rewrites its videos'
// records) or a deletion, it says so. What a caller changes in the record
// it got stays its own.
func TestVideoForgetsWhatCommitsChange(t *testing.T) {
	s, db, exec := following(t)
	coll := domain.CollectionStream("acme", "a")
	exec(coll, domain.CreateCollection{Account: "acme", Slug: "a", Name: "A"})
	id := s.NewID()
	video := domain.StreamID{Aggregate: domain.AggVideo, ID: id}
	exec(video, domain.AcceptUpload{Account: "acme", Collection: "a", CollectionName: "A", Filename: "a.mp4", Size: 1})
	cached := func() bool {
		_, _, ok := db.caches.videos.get(id)
		return ok
	}
	read := func() Video {
		t.Helper()
		v, ok, err := db.Video(id)
		if err != nil || !ok {
			t.Fatalf("video: %v %v", ok, err)
		}
		return v
	}
	for range 2 {
		if v := read(); v.Status != domain.StatusPending || v.CollectionName != "A" {
			t.Fatalf("after the upload: %+v", v)
		}
	}
	if !cached() {
		t.Fatal("a record read is not kept")
	}
	mine := read()
	mine.Resolutions = append(mine.Resolutions[:0], "1080p")
	mine.Metadata = map[string]string{"k": "v"}
	if v := read(); len(v.Resolutions) != 0 || v.Metadata != nil {
		t.Fatalf("a caller's change reached the cache: %+v", v)
	}

	exec(video, domain.StartTranscode{Worker: "w"})
	if v := read(); v.Status != domain.StatusProcessing {
		t.Fatalf("after the transcode started: %+v", v)
	}
	exec(coll, domain.RenameCollection{Account: "acme", Name: "B"})
	if v := read(); v.CollectionName != "B" {
		t.Fatalf("after the collection's rename: %+v", v)
	}
	exec(video, domain.DeleteVideo{Account: "acme"})
	if v, ok, err := db.Video(id); ok || err != nil {
		t.Fatalf("after the deletion: %+v %v %v", v, ok, err)
	}
}

// clone leaves nothing shared: every pointer, slice and map of a Video,
// those added later included, is a copy.
func TestVideoCloneSharesNothing(t *testing.T) {
	var v Video
	rv := reflect.ValueOf(&v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		}
	}
	c := v.clone()
	rc := reflect.ValueOf(c)
	for i := range rv.NumField() {
		f, g := rv.Field(i), rc.Field(i)
		switch f.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map:
			if f.Pointer() == g.Pointer() {
				t.Errorf("clone shares Video.%s", rv.Type().Field(i).Name)
			}
		}
	}
	if !reflect.DeepEqual(v, c) {
		t.Fatalf("clone differs: %+v, %+v", v, c)
	}
}

// QueuePositions answers from what it walked until a commit writes one of
// the account's videos: a queued upload moves up as soon as the one ahead
// of it starts.
func TestQueuePositionsForgetWhatCommitsChange(t *testing.T) {
	s, db, exec := following(t)
	exec(domain.CollectionStream("acme", "a"), domain.CreateCollection{Account: "acme", Slug: "a", Name: "A"})
	var ids []domain.StreamID
	var seqs []uint64
	for range 3 {
		id := domain.StreamID{Aggregate: domain.AggVideo, ID: s.NewID()}
		ids = append(ids, id)
		seqs = append(seqs, exec(id, domain.AcceptUpload{Account: "acme", Collection: "a", CollectionName: "A", Filename: "a.mp4", Size: 1}))
	}
	positions := func(limit int, of ...uint64) []int {
		t.Helper()
		pos, err := db.QueuePositions("acme", of, limit)
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	for range 2 { // walked, then from what was walked
		if got := positions(1000, seqs[1]); !slices.Equal(got, []int{2}) {
			t.Fatalf("second upload: %v", got)
		}
	}
	if got := positions(1000, seqs...); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("all three: %v", got)
	}
	if got := positions(2, seqs...); !slices.Equal(got, []int{1, 2, 0}) {
		t.Fatalf("the first two only: %v", got)
	}
	exec(ids[0], domain.StartTranscode{Worker: "w"})
	if got := positions(1000, seqs...); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("after the first started: %v", got)
	}
}
