package eventstore_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/objects"
)

// A worker fetches originals and publishes outputs in the media bucket
// kino serve made, with its own role; it cannot delete the bucket, change
// it, list it, or make another.
func TestWorkerRoleUsesTheMediaBucketButCannotDropIt(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	if _, err := objects.Open(ctx, serve); err != nil {
		t.Fatal(err)
	}
	worker, err := eventstore.Open(ctx, eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleWorker), Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	obj, err := objects.Open(ctx, worker)
	if err != nil {
		t.Fatalf("worker opens the media bucket: %v", err)
	}
	data := bytes.Repeat([]byte("kino"), 100<<10)
	for range 2 { // the second Put replaces the first and purges its chunks
		if _, err := obj.Put(ctx, "01JVIDEO00000000000000000A/hls/master.m3u8", bytes.NewReader(data)); err != nil {
			t.Fatalf("worker publishes an output: %v", err)
		}
	}
	r, _, err := obj.Open(ctx, "01JVIDEO00000000000000000A/hls/master.m3u8")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("worker reads back %d bytes (%v)", len(got), err)
	}
	if err := obj.Delete(ctx, "01JVIDEO00000000000000000A/hls/master.m3u8"); err != nil {
		t.Fatalf("worker deletes an output: %v", err)
	}
	if _, err := obj.Stat(ctx, "01JVIDEO00000000000000000A/hls/master.m3u8"); !domain.IsKind(err, domain.NotFound) {
		t.Fatalf("deleted object: %v, want NotFound", err)
	}

	violations := make(chan error, 16)
	nc, err := nats.Connect(srv.URL(), seed(t, srv, eventstore.RoleWorker), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		violations <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, subject := range []string{
		"$JS.API.STREAM.DELETE.OBJ_" + eventstore.MediaBucket,
		"$JS.API.STREAM.UPDATE.OBJ_" + eventstore.MediaBucket,
		"$JS.API.STREAM.CREATE.OBJ_OTHER",
		"$JS.API.CONSUMER.CREATE.OBJ_" + eventstore.MediaBucket,
		"$JS.API.STREAM.PURGE." + eventstore.StreamName,
	} {
		t.Run(subject, func(t *testing.T) {
			if err := nc.PublishRequest(subject, nc.NewRespInbox(), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			waitViolation(t, violations, subject)
		})
	}
	if _, err := objects.Open(ctx, serve); err != nil {
		t.Fatalf("the bucket is gone: %v", err)
	}
}
