package playback_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/seal"
	"github.com/nats-io/nats.go"
)

// ringStore is the KV bucket of a fresh embedded NATS.
func ringStore(t *testing.T) *kv.PlaybackKeys {
	t.Helper()
	store, err := kv.OpenPlaybackKeys(context.Background(), eventstoretest.Run(t))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func secretKey(t *testing.T) *seal.Key {
	t.Helper()
	k, err := seal.LoadOrCreate(filepath.Join(t.TempDir(), "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newRing is a ring on a fresh store (clock nil: real time).
func newRing(t *testing.T, clock *eventstoretest.Clock) *playback.Ring {
	t.Helper()
	var now func() time.Time
	if clock != nil {
		now = clock.Now
	}
	return playback.NewRing(ringStore(t), secretKey(t), now)
}

// Two nodes share one ring: the first key is made once; a rotation on one
// node reaches the other within its second of caching; without grace the
// old key's tokens are refused at once, with grace until its end; the
// ring's keys are sealed with the secret key, and another secret key
// cannot use them.
func TestRing(t *testing.T) {
	ctx := context.Background()
	clock := eventstoretest.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	later := func(d time.Duration) { clock.Set(clock.Now().Add(d)) }
	store, key := ringStore(t), secretKey(t)
	a := playback.NewRing(store, key, clock.Now)
	b := playback.NewRing(store, key, clock.Now)
	tokens := func(r *playback.Ring) playback.Tokens {
		return playback.Tokens{Ring: r, Keys: noKeys{}, Now: clock.Now}
	}
	verify := func(t *testing.T, r *playback.Ring, tok string) error {
		t.Helper()
		_, err := tokens(r).Verify(ctx, "v1", "acct", tok)
		return err
	}

	first, _, err := a.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id, _, err := b.Current(ctx); err != nil || id != first {
		t.Fatalf("node b's key %s (%v), node a's %s: the first key was made twice", id, err, first)
	}
	old, _, err := tokens(a).Mint(ctx, "v1", "", time.Hour)
	if err != nil || verify(t, b, old) != nil {
		t.Fatalf("a token of node a on node b: %v", err)
	}

	// With grace: the old key's tokens play until its end, on both nodes.
	second, err := a.Rotate(ctx, 10*time.Minute)
	if err != nil || second == first {
		t.Fatalf("rotate: %s %v", second, err)
	}
	later(2 * time.Second) // node b's cached ring is stale now
	if id, _, _ := b.Current(ctx); id != second {
		t.Fatalf("node b signs with %s after the rotation to %s", id, second)
	}
	if verify(t, a, old) != nil || verify(t, b, old) != nil {
		t.Fatal("the old key's token was refused within its grace")
	}
	list, err := b.List(ctx)
	if err != nil || len(list) != 2 || !list[0].Current || list[0].ID != second || list[1].ID != first || list[1].Until == nil {
		t.Fatalf("list %+v %v", list, err)
	}
	later(10 * time.Minute)
	if verify(t, b, old) == nil {
		t.Fatal("the old key's token was accepted after its grace")
	}

	// Without grace: refused at once, on the other node within a second.
	tok, _, _ := tokens(b).Mint(ctx, "v1", "", time.Hour)
	if _, err := b.Rotate(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if verify(t, b, tok) == nil {
		t.Fatal("a rotated-out key's token was accepted by the node that rotated")
	}
	later(2 * time.Second)
	if verify(t, a, tok) == nil {
		t.Fatal("a rotated-out key's token was accepted by the other node")
	}
	if list, _ := a.List(ctx); len(list) != 1 {
		t.Fatalf("keys kept after a rotation without grace: %+v", list)
	}
	if _, err := a.Rotate(ctx, -time.Second); err == nil {
		t.Fatal("a negative grace was taken")
	}

	// Another secret key cannot open the ring.
	if _, _, err := playback.NewRing(store, secretKey(t), clock.Now).Current(ctx); err == nil {
		t.Fatal("another secret key opened the ring")
	}
}

// A worker holds the secret key the ring is sealed with, so it must not
// read the ring at all: its credentials are refused every way in.
func TestWorkersCannotReadTheRing(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	store, err := kv.OpenPlaybackKeys(ctx, serve)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := playback.NewRing(store, secretKey(t), nil).Current(ctx); err != nil {
		t.Fatal(err)
	}
	violations := make(chan error, 16)
	nc, err := nats.Connect(srv.URL(), eventstoretest.Seed(t, srv, eventstore.RoleWorker), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		violations <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	stream := "KV_" + kv.PlaybackKeysBucket
	// Nor hear kino serve's replies (its reads of the ring among them):
	// the worker's replies come on its own inbox prefix.
	if _, err := nc.SubscribeSync("_INBOX.>"); err != nil {
		t.Fatal(err)
	}
	t.Run("kino serve's replies", func(t *testing.T) {
		eventstoretest.WaitViolation(t, violations, "_INBOX.>")
	})
	for _, subject := range []string{
		"$JS.API.DIRECT.GET." + stream,
		"$JS.API.DIRECT.GET." + stream + ".$KV." + kv.PlaybackKeysBucket + ".ring",
		"$JS.API.STREAM.MSG.GET." + stream,
		"$JS.API.STREAM.INFO." + stream,
		"$KV." + kv.PlaybackKeysBucket + ".ring",
	} {
		t.Run(subject, func(t *testing.T) {
			if err := nc.PublishRequest(subject, nc.NewRespInbox(), []byte(`{"seq":1}`)); err != nil {
				t.Fatal(err)
			}
			eventstoretest.WaitViolation(t, violations, subject)
		})
	}
}

// While NATS does not answer, the ring last read keeps signing and
// checking tokens for a minute, then the ring is Unavailable (503).
func TestRingThroughAnOutage(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	store, err := kv.OpenPlaybackKeys(ctx, eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe)))
	if err != nil {
		t.Fatal(err)
	}
	clock := eventstoretest.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	r := playback.NewRing(store, secretKey(t), clock.Now)
	id, _, err := r.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	clock.Set(clock.Now().Add(2 * time.Second))
	if got, _, err := r.Current(ctx); err != nil || got != id {
		t.Fatalf("during the outage: %s %v", got, err)
	}
	if _, ok, err := r.Lookup(ctx, id); err != nil || !ok {
		t.Fatalf("lookup during the outage: %v %v", ok, err)
	}
	clock.Set(clock.Now().Add(time.Minute))
	if _, _, err := r.Current(ctx); domain.KindOf(err) != domain.Unavailable {
		t.Fatalf("a minute into the outage: %v", err)
	}
}
