package eventstore_test

import (
	"context"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// Next reads the first event at or after a sequence on a subject filter
// (wildcards too), and says when there is none; Between walks a range.
// Both work with the worker role's credentials (STREAM.MSG.GET).
func TestNextAndBetween(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	worker, err := eventstore.Open(ctx, eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleWorker), Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	a := domain.StreamID{Aggregate: domain.AggVideo, ID: "01JVIDEO00000000000000000A"}
	b := domain.StreamID{Aggregate: domain.AggVideo, ID: "01JVIDEO00000000000000000B"}
	var seqs []uint64
	for _, w := range []struct {
		id domain.StreamID
		p  domain.Payload
	}{
		{a, domain.UploadAccepted{Account: "acme", Filename: "a.mp4"}},
		{b, domain.UploadAccepted{Account: "acme", Filename: "b.mp4"}},
		{a, domain.TranscodeStarted{Account: "acme", Attempt: 1}},
		{b, domain.VideoDeleted{Account: "acme"}},
	} {
		ev, err := serve.Record(ctx, w.id, w.p)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev[0].Seq)
	}
	for _, tc := range []struct {
		name, filter string
		from         uint64
		want         uint64 // 0: none
	}{
		{"first of a type", "video.*.UploadAccepted", 1, seqs[0]},
		{"next of a type", "video.*.UploadAccepted", seqs[0] + 1, seqs[1]},
		{"none after", "video.*.UploadAccepted", seqs[1] + 1, 0},
		{"one aggregate", a.Filter(), seqs[0] + 1, seqs[2]},
		{"from zero", b.Filter(), 0, seqs[1]},
		{"no such subject", "webhook.*.WebhookSubscribed", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok, err := worker.Next(ctx, tc.filter, tc.from)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != 0) || (ok && (e.Seq != tc.want || e.ID == "")) {
				t.Fatalf("got %v seq %d, want seq %d", ok, e.Seq, tc.want)
			}
		})
	}
	var got []uint64
	if err := worker.Between(ctx, "video.>", seqs[1], seqs[2], func(e domain.Event) error {
		got = append(got, e.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != seqs[1] || got[1] != seqs[2] {
		t.Fatalf("between %d and %d: %v", seqs[1], seqs[2], got)
	}
}
