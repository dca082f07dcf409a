package kv_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
)

// Nodes updating one key at once never lose an update: each of 8 nodes on
// two connections takes one unit 25 times, and the shares add up to 200.
func TestRateUpdatesAreAtomic(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	var ledgers []*kv.RateLimits
	for range 2 {
		l, err := kv.OpenRateLimits(ctx, eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe)))
		if err != nil {
			t.Fatal(err)
		}
		ledgers = append(ledgers, l)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	until := now.Add(time.Minute).UnixNano()
	var wg sync.WaitGroup
	var mu sync.Mutex
	mine := map[string]int{}
	for i := range 8 {
		node := string(rune('a' + i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				err := ledgers[i%2].UpdateRate(ctx, "acct:acme", node, now, func(others []kv.RateHolding) kv.RateHolding {
					mu.Lock()
					defer mu.Unlock()
					return kv.RateHolding{Share: mine[node] + 1, Until: until}
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				mine[node]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	total := 0
	if err := ledgers[0].UpdateRate(ctx, "acct:acme", "reader", now, func(others []kv.RateHolding) kv.RateHolding {
		total = 0
		for _, h := range others {
			total += h.Share
		}
		return kv.RateHolding{}
	}); err != nil {
		t.Fatal(err)
	}
	if total != 200 {
		t.Fatalf("shares add up to %d, want 200", total)
	}
}

// A holding whose lease has lapsed (beyond the allowed clock skew) is not
// shown to the others, and is dropped.
func TestLapsedRateHoldingsAreDropped(t *testing.T) {
	ctx := context.Background()
	l, err := kv.OpenRateLimits(ctx, eventstoretest.Run(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	hold := func(node string, until time.Time) {
		t.Helper()
		if err := l.UpdateRate(ctx, "addr:192.0.2.1", node, now, func([]kv.RateHolding) kv.RateHolding {
			return kv.RateHolding{Share: 5, Used: 5, Until: until.UnixNano()}
		}); err != nil {
			t.Fatal(err)
		}
	}
	hold("a", now.Add(-kv.RateSkew-time.Nanosecond)) // lapsed
	hold("b", now.Add(-kv.RateSkew))                 // within the skew
	var seen []kv.RateHolding
	if err := l.UpdateRate(ctx, "addr:192.0.2.1", "c", now, func(others []kv.RateHolding) kv.RateHolding {
		seen = others
		return kv.RateHolding{}
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Until != now.Add(-kv.RateSkew).UnixNano() {
		t.Fatalf("others %+v, want b's holding alone", seen)
	}
}

// Without NATS an update fails at once: requests never wait on the ledger.
func TestRateUpdateFailsFastWithoutNATS(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	store := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	l, err := kv.OpenRateLimits(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for store.Healthy() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // poll: the client notices the lost connection on its own
	}
	err = l.UpdateRate(ctx, "acct:acme", "a", time.Now(), func([]kv.RateHolding) kv.RateHolding {
		t.Fatal("decide called without NATS")
		return kv.RateHolding{}
	})
	if !errors.Is(err, kv.ErrRateUnavailable) {
		t.Fatalf("err = %v, want ErrRateUnavailable", err)
	}
}

// On a replicated (R3) bucket a compare-and-swap conflict comes back as
// another error code (10164) than on one server (10071): concurrent rate
// updates through two nodes must still all land, none reported as NATS
// being unavailable (which would make the API nodes count alone).
func TestRateUpdatesOnAReplicatedBucket(t *testing.T) {
	c := eventstoretest.StartCluster(t, 3)
	ctx := context.Background()
	var ledgers []*kv.RateLimits
	for i := range 2 {
		l, err := kv.OpenRateLimits(ctx, c.Open(i, 3))
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
				err := ledgers[i%2].UpdateRate(ctx, "acct:acme", node, now, func([]kv.RateHolding) kv.RateHolding {
					return kv.RateHolding{Share: n, Until: until}
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
	if err := ledgers[0].UpdateRate(ctx, "acct:acme", "reader", now, func(others []kv.RateHolding) kv.RateHolding {
		total = 0
		for _, h := range others {
			total += h.Share
		}
		return kv.RateHolding{}
	}); err != nil {
		t.Fatal(err)
	}
	if total != writers*each {
		t.Fatalf("shares add up to %d, want %d", total, writers*each)
	}
}
