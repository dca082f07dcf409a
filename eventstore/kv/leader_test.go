package kv_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
)

// Sessions and the playback key ring are read from their bucket's leader
// (STREAM.MSG.GET), never by a direct get, which any replica answers,
// however far behind: the requests on the wire say which was asked. A
// delete, a purge or a marker left by the server reads as nothing.
func TestSessionsAndKeyRingAreReadFromTheLeader(t *testing.T) {
	ctx := context.Background()
	s := eventstoretest.Run(t)
	sessions, err := kv.OpenSessions(ctx, s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := kv.OpenPlaybackKeys(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	nc := s.NATS().NC
	watch := func(subject string) *nats.Subscription {
		sub, err := nc.SubscribeSync(subject)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
		return sub
	}
	pending := func(sub *nats.Subscription) int {
		if err := nc.Flush(); err != nil { // the requests reach every subscriber before the flush's answer
			t.Fatal(err)
		}
		n, _, err := sub.Pending()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	direct := watch("$JS.API.DIRECT.GET.>")
	for _, c := range []struct {
		bucket string
		put    func() error
		get    func() ([]byte, bool, error)
	}{
		{kv.SessionsBucket,
			func() error { return sessions.Create(ctx, "k", []byte("v")) },
			func() ([]byte, bool, error) { v, _, ok, err := sessions.Get(ctx, "k"); return v, ok, err }},
		{kv.PlaybackKeysBucket,
			func() error { return ring.Put(ctx, []byte("v"), 0) },
			func() ([]byte, bool, error) { v, _, ok, err := ring.Get(ctx); return v, ok, err }},
	} {
		leader := watch("$JS.API.STREAM.MSG.GET.KV_" + c.bucket)
		if err := c.put(); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := c.get(); err != nil || !ok || string(v) != "v" {
			t.Fatalf("%s: %q %v %v", c.bucket, v, ok, err)
		}
		if n, d := pending(leader), pending(direct); n != 1 || d != 0 {
			t.Fatalf("%s: %d reads from the leader and %d direct gets; want 1 and 0", c.bucket, n, d)
		}

		// A marker the server leaves (a TTL's expiry, a removal) ends the value.
		key := "k"
		if c.bucket == kv.PlaybackKeysBucket {
			key = "ring"
		}
		marker := nats.NewMsg("$KV." + c.bucket + "." + key)
		marker.Header.Set(jetstream.MarkerReasonHeader, "Remove")
		if _, err := s.NATS().JS.PublishMsg(ctx, marker); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := c.get(); err != nil || ok {
			t.Fatalf("%s after a marker: %q %v %v", c.bucket, v, ok, err)
		}
	}
	// A bucket whose stream is gone (a server that lost its storage)
	// reads as empty and is made again by the next write.
	if err := s.NATS().JS.DeleteStream(ctx, "KV_"+kv.PlaybackKeysBucket); err != nil {
		t.Fatal(err)
	}
	if v, _, ok, err := ring.Get(ctx); err != nil || ok {
		t.Fatalf("the ring of a lost bucket: %q %v %v", v, ok, err)
	}
	if err := ring.Put(ctx, []byte("again"), 0); err != nil {
		t.Fatal(err)
	}
	if v, _, ok, err := ring.Get(ctx); err != nil || !ok || string(v) != "again" {
		t.Fatalf("the ring made again: %q %v %v", v, ok, err)
	}
	if err := sessions.Create(ctx, "ended", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := sessions.End(ctx, "ended"); err != nil {
		t.Fatal(err)
	}
	if v, _, ok, err := sessions.Get(ctx, "ended"); err != nil || ok {
		t.Fatalf("an ended session: %q %v %v", v, ok, err)
	}
}
