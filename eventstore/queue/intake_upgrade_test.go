package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
)

// An intake durable made by an older kino (it took UploadAccepted only)
// takes the longer filter list of this one where it stands, after a
// restart of the server on the same data directory: the uploads it
// already moved are not moved again, the upload it had not reached yet
// is, and a TranscodeRetried is queued too, as its own job (not dropped as
// a duplicate of the video's upload job).
func TestIntakeTakesNewFilterSubjectsOnAnUpgradedStore(t *testing.T) {
	dir := t.TempDir()
	srv := eventstoretest.Server(t, dir)
	s := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))

	old := fairConfig(1, map[string]int{"a": 1})
	got := make(chan *queue.Job, 10)
	stop := runFair(t, s, old, func(ctx context.Context, job *queue.Job) {
		got <- job
		ack(t, job)
	})
	done := upload(t, s, "a")
	if j := recvJob(t, got); j.Event.AggregateID != done {
		t.Fatalf("old intake moved %s, want %s", j.Event.AggregateID, done)
	}
	waitDone(t, s)
	stop()
	_ = s.Close()
	srv.Shutdown()

	// The upgraded kino: same data directory, the new filter list.
	srv = eventstoretest.Server(t, dir)
	s = eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	waiting := upload(t, s, "a")
	if _, err := s.Record(context.Background(), domain.StreamID{Aggregate: domain.AggVideo, ID: done},
		domain.TranscodeRetried{Account: "a"}); err != nil {
		t.Fatal(err)
	}
	cfg := fairConfig(1, map[string]int{"a": 1})
	cfg.FilterSubjects = []string{"video.*.UploadAccepted", "video.*.TranscodeRetried"}
	cfg.Account = func(e domain.Event) string {
		switch d := e.Data.(type) {
		case domain.UploadAccepted:
			return d.Account
		case domain.TranscodeRetried:
			return d.Account
		}
		return ""
	}
	got = make(chan *queue.Job, 10)
	runFair(t, s, cfg, func(ctx context.Context, job *queue.Job) {
		got <- job
		ack(t, job)
	})
	var types []string
	for range 2 {
		j := recvJob(t, got)
		types = append(types, j.Event.Type+" "+j.Event.AggregateID)
	}
	want := []string{"UploadAccepted " + waiting, "TranscodeRetried " + done}
	if types[0] != want[0] || types[1] != want[1] {
		t.Fatalf("jobs %q, want %q", types, want)
	}
	waitDone(t, s)
	select {
	case j := <-got:
		t.Fatalf("extra job %s %s", j.Event.Type, j.Event.AggregateID)
	default:
	}
}

func recvJob(t *testing.T, ch <-chan *queue.Job) *queue.Job {
	t.Helper()
	select {
	case j := <-ch:
		return j
	case <-time.After(30 * time.Second):
		t.Fatal("no job started")
		return nil
	}
}

// A retry soon after the upload's job ran is a job of its own: the jobs
// stream drops duplicates by message id for a day, and the upload's job
// was named by the video id.
func TestIntakeQueuesARetryOfAVideoWhoseUploadRanMomentsAgo(t *testing.T) {
	s := eventstoretest.Run(t)
	cfg := fairConfig(1, map[string]int{"a": 1})
	cfg.FilterSubjects = []string{"video.*.UploadAccepted", "video.*.TranscodeRetried"}
	cfg.Account = func(e domain.Event) string {
		switch d := e.Data.(type) {
		case domain.UploadAccepted:
			return d.Account
		case domain.TranscodeRetried:
			return d.Account
		}
		return ""
	}
	got := make(chan *queue.Job, 10)
	runFair(t, s, cfg, func(ctx context.Context, job *queue.Job) {
		got <- job
		ack(t, job)
	})
	id := upload(t, s, "a")
	recvJob(t, got)
	for range 2 { // twice: every retry is a job
		if _, err := s.Record(context.Background(), domain.StreamID{Aggregate: domain.AggVideo, ID: id},
			domain.TranscodeRetried{Account: "a"}); err != nil {
			t.Fatal(err)
		}
		if j := recvJob(t, got); j.Event.Type != domain.TypeTranscodeRetried || j.Event.AggregateID != id {
			t.Fatalf("job %s %s, want TranscodeRetried %s", j.Event.Type, j.Event.AggregateID, id)
		}
	}
	waitDone(t, s)
}
