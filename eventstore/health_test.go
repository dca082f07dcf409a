package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/internal/smalldisk"
	"github.com/kino-video/kino/eventstore/natsserver"
)

func createAccount(ctx context.Context, s *eventstore.Store, slug string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := s.Append(ctx, domain.StreamID{Aggregate: domain.AggAccount, ID: slug}, 0,
		[]domain.Payload{domain.AccountCreated{Plan: domain.PlanFree}})
	return err
}

// Once an append fails on a full disk, nats-server answers no append to
// the stream until it restarts, even after space is freed. The store says
// so at once (Unavailable, not a wait), Heal reports it, restarts the
// embedded server once there is room, and appends work again with nothing
// acknowledged before the fault lost. Without Heal the appends after the
// disk was freed never succeed. The disk is a 64 MiB volume with kino
// serve --disk-reserve 4MiB, of which a quarter is freed: room enough for
// the store, though 64 MiB free, what Heal waits for on a large disk, can
// never be had there.
func TestFullDiskStopsWritesUntilHealRestartsTheServer(t *testing.T) {
	t.Parallel()
	const size = 64 << 20
	dir := smalldisk.Mount(t, size)
	srv := eventstoretest.Server(t, dir)
	s, err := eventstore.Open(context.Background(), eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleServe),
		Name: t.Name(), Manage: true, AckTimeout: time.Second, ProbeEvery: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	healed := make(chan error, 1)
	go func() { healed <- srv.Heal(ctx, natsserver.HealConfig{Every: 50 * time.Millisecond, Reserve: 4 << 20}) }()
	t.Cleanup(func() { cancel(); <-healed })

	var stored []string
	for i := 0; i < 3; i++ {
		slug := fmt.Sprintf("before-%d", i)
		if err := createAccount(ctx, s, slug); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, slug)
	}

	filler := smalldisk.Fill(t, dir, 0)
	// Appends may still fit in what the filler left; one soon does not.
	var failed error
	for i := 0; failed == nil; i++ {
		if i == 10000 {
			t.Fatal("appends never failed on a full disk")
		}
		slug := fmt.Sprintf("full-%d", i)
		if failed = createAccount(ctx, s, slug); failed == nil {
			stored = append(stored, slug)
		}
	}
	if !domain.IsKind(failed, domain.Unavailable) || !errors.Is(failed, eventstore.ErrUnavailable) {
		t.Fatalf("append on a full disk: %v (kind %v), want Unavailable", failed, domain.KindOf(failed))
	}
	// Refused at once now, until a probe is due (a minute here) or the
	// connection is made again.
	if err := s.Writable(); !domain.IsKind(err, domain.Unavailable) {
		t.Fatalf("Writable after a failed append: %v", err)
	}
	if err := createAccount(ctx, s, "refused"); !domain.IsKind(err, domain.Unavailable) {
		t.Fatalf("append after a failed append: %v", err)
	}
	if s.Health().Writes == nil {
		t.Fatal("Health().Writes is nil after an unacknowledged append")
	}
	eventstoretest.Eventually(t, "Heal to see the store's write error", func() bool { return srv.Health() != nil })

	// Freeing the space is not enough for nats-server; Heal restarts it.
	st, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, st.Size()-size/4); err != nil {
		t.Fatal(err)
	}
	eventstoretest.Eventually(t, "appends to work again", func() bool { return createAccount(ctx, s, "after") == nil })
	stored = append(stored, "after")
	eventstoretest.Eventually(t, "Heal to report the server healthy", func() bool { return srv.Health() == nil })
	if err := s.Writable(); err != nil {
		t.Fatalf("Writable after recovery: %v", err)
	}
	for _, slug := range stored {
		events, _, err := s.Load(ctx, domain.StreamID{Aggregate: domain.AggAccount, ID: slug})
		if err != nil || len(events) != 1 {
			t.Fatalf("account %s acknowledged before the fault: %d events, %v", slug, len(events), err)
		}
	}
}

// While NATS is down, an operation under FailFast (a request with a client
// waiting) fails at once with Unavailable; one without it (a worker) waits
// for the connection and lands once the server is back on its port and
// store. The outage is logged once each way.
func TestOutageFailsFastOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := eventstoretest.Server(t, dir)
	s := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	ctx := context.Background()
	if err := createAccount(ctx, s, "before"); err != nil {
		t.Fatal(err)
	}
	url := srv.URL()
	srv.Shutdown()
	eventstoretest.Eventually(t, "the store to see the outage", func() bool { return !s.Health().Connected })

	fast := eventstore.FailFast(ctx)
	if err := createAccount(fast, s, "refused"); !domain.IsKind(err, domain.Unavailable) || !errors.Is(err, eventstore.ErrUnavailable) || !errors.Is(err, eventstore.ErrNotStored) {
		t.Fatalf("append under FailFast while NATS is down: %v", err)
	}
	if _, _, err := s.Load(fast, domain.StreamID{Aggregate: domain.AggAccount, ID: "before"}); !domain.IsKind(err, domain.Unavailable) {
		t.Fatalf("load under FailFast while NATS is down: %v", err)
	}
	if _, err := s.LastSeq(fast); !domain.IsKind(err, domain.Unavailable) {
		t.Fatalf("LastSeq under FailFast while NATS is down: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- createAccount(ctx, s, "waited") }()

	again, err := natsserver.StartEmbedded(dir, strings.TrimPrefix(url, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Shutdown)
	if err := <-waited; err != nil {
		t.Fatalf("append without FailFast across the outage: %v", err)
	}
	// The append may land on the new connection a moment before the
	// reconnection handler marks the store connected again; until then
	// FailFast still refuses.
	eventstoretest.Eventually(t, "the store to see the server back", func() bool { return s.Health().Connected })
	for _, slug := range []string{"before", "waited"} {
		if events, _, err := s.Load(fast, domain.StreamID{Aggregate: domain.AggAccount, ID: slug}); err != nil || len(events) != 1 {
			t.Fatalf("account %s: %d events, %v", slug, len(events), err)
		}
	}
}
