package eventstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// Nodes updating one key at once never lose an update: each of 8 nodes on
// two connections takes one unit 25 times, and the shares add up to 200.
func TestRateUpdatesAreAtomic(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	var ledgers []*eventstore.RateLimits
	for range 2 {
		l, err := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe)).OpenRateLimits(ctx)
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
				err := ledgers[i%2].UpdateRate(ctx, "acct:acme", node, now, func(others []eventstore.RateHolding) eventstore.RateHolding {
					mu.Lock()
					defer mu.Unlock()
					return eventstore.RateHolding{Share: mine[node] + 1, Until: until}
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
	if err := ledgers[0].UpdateRate(ctx, "acct:acme", "reader", now, func(others []eventstore.RateHolding) eventstore.RateHolding {
		total = 0
		for _, h := range others {
			total += h.Share
		}
		return eventstore.RateHolding{}
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
	l, err := eventstoretest.Run(t).OpenRateLimits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	hold := func(node string, until time.Time) {
		t.Helper()
		if err := l.UpdateRate(ctx, "addr:192.0.2.1", node, now, func([]eventstore.RateHolding) eventstore.RateHolding {
			return eventstore.RateHolding{Share: 5, Used: 5, Until: until.UnixNano()}
		}); err != nil {
			t.Fatal(err)
		}
	}
	hold("a", now.Add(-eventstore.RateSkew-time.Nanosecond)) // lapsed
	hold("b", now.Add(-eventstore.RateSkew))                 // within the skew
	var seen []eventstore.RateHolding
	if err := l.UpdateRate(ctx, "addr:192.0.2.1", "c", now, func(others []eventstore.RateHolding) eventstore.RateHolding {
		seen = others
		return eventstore.RateHolding{}
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Until != now.Add(-eventstore.RateSkew).UnixNano() {
		t.Fatalf("others %+v, want b's holding alone", seen)
	}
}

// Without NATS an update fails at once: requests never wait on the ledger.
func TestRateUpdateFailsFastWithoutNATS(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	store := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	l, err := store.OpenRateLimits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for store.Healthy() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // poll: the client notices the lost connection on its own
	}
	err = l.UpdateRate(ctx, "acct:acme", "a", time.Now(), func([]eventstore.RateHolding) eventstore.RateHolding {
		t.Fatal("decide called without NATS")
		return eventstore.RateHolding{}
	})
	if !errors.Is(err, eventstore.ErrRateUnavailable) {
		t.Fatalf("err = %v, want ErrRateUnavailable", err)
	}
}
