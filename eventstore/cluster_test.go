package eventstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// On a replicated (R3) bucket a compare-and-swap conflict comes back as
// another error code (10164) than on one server (10071): concurrent rate
// updates through two nodes must still all land, none reported as NATS
// being unavailable (which would make the API nodes count alone).
func TestRateUpdatesOnAReplicatedBucket(t *testing.T) {
	c := eventstoretest.StartCluster(t, 3)
	ctx := context.Background()
	var ledgers []*eventstore.RateLimits
	for i := range 2 {
		l, err := c.Open(i, 3).OpenRateLimits(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ledgers = append(ledgers, l)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	until := now.Add(time.Minute).UnixNano()
	const writers, each = 6, 10
	errs := make(chan error, writers)
	for i := range writers {
		node := string(rune('a' + i))
		go func() {
			for n := 1; n <= each; n++ {
				err := ledgers[i%2].UpdateRate(ctx, "acct:acme", node, now, func([]eventstore.RateHolding) eventstore.RateHolding {
					return eventstore.RateHolding{Share: n, Until: until}
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatalf("a concurrent update on the R3 bucket failed: %v", err)
		}
	}
	total := 0
	if err := ledgers[0].UpdateRate(ctx, "acct:acme", "reader", now, func(others []eventstore.RateHolding) eventstore.RateHolding {
		total = 0
		for _, h := range others {
			total += h.Share
		}
		return eventstore.RateHolding{}
	}); err != nil {
		t.Fatal(err)
	}
	if total != writers*each {
		t.Fatalf("shares add up to %d, want %d", total, writers*each)
	}
}

// With two of three nodes gone the event stream has no quorum. The store
// finds out by itself, without an append (a node its load balancer
// dropped gets none): Health says writes fail, for as long as the quorum
// is lost (a leaderless replica still answers the stream's info, which is
// no proof of health), and appends are refused at once, before anything
// is sent, as Unavailable (503 with Retry-After, not a 500). Once the nodes
// are back it says it takes writes again, and an append goes through.
func TestAppendWithoutQuorumIsUnavailable(t *testing.T) {
	c := eventstoretest.StartCluster(t, 3)
	ctx := context.Background()
	s := c.Open(0, 3, func(cfg *eventstore.Config) {
		cfg.AckTimeout = 2 * time.Second
		cfg.ProbeEvery = 100 * time.Millisecond
	})
	create := func(slug string) error {
		_, err := s.Append(ctx, domain.AccountStream(slug), 0, []domain.Payload{domain.AccountCreated{Plan: domain.PlanFree}})
		return err
	}
	if err := create("before"); err != nil {
		t.Fatal(err)
	}
	c.Nodes[1].Shutdown()
	c.Nodes[2].Shutdown()
	lost := time.Now()
	eventstoretest.Eventually(t, "the store to see the quorum lost", func() bool { return s.Health().Writes != nil })
	t.Logf("quorum lost -> writes reported failing: %s", time.Since(lost).Round(100*time.Millisecond))
	err := create("without-quorum")
	if !domain.IsKind(err, domain.Unavailable) || !errors.Is(err, eventstore.ErrUnavailable) || !errors.Is(err, eventstore.ErrNotStored) {
		t.Fatalf("append without quorum: %v (kind %v), want Unavailable, refused before it was sent", err, domain.KindOf(err))
	}
	// It stays so, through many of the store's probes and the replica's
	// leaderless answers.
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
		if s.Health().Writes == nil || s.Writable() == nil {
			t.Fatal("the store says it takes writes again without a quorum")
		}
	}
	c.Start(1)
	c.Start(2)
	eventstoretest.Eventually(t, "writes to be reported working again", func() bool { return s.Health().Writes == nil })
	if err := create("after-quorum"); err != nil {
		t.Fatal(err)
	}
}
