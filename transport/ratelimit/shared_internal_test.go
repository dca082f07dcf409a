package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
)

// sharedLimiters are n limiters (API nodes) sharing one ledger on a real
// embedded NATS, each on its own connection.
func sharedLimiters(t *testing.T, n int) []*Limiter {
	t.Helper()
	srv := eventstoretest.Server(t, t.TempDir())
	var ls []*Limiter
	for i := range n {
		ledger, err := kv.OpenRateLimits(context.Background(), eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe)))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, NewShared(ledger, "acct:", "node-"+strconv.Itoa(i), quiet))
	}
	return ls
}

// Across nodes, no 60 s span holds more allowed requests of one key than
// its limit: requests at random times over five minutes, to a random node
// each (or in runs on one node, as a sticky balancer sends them), bursts
// at minute boundaries included, checked pairwise. And the nodes together
// use the budget: at least limit - nodes × block in each busy minute.
func TestSharedLimitNeverExceedsLimitAcrossNodes(t *testing.T) {
	tests := []struct {
		name   string
		nodes  int
		limit  int
		n      int
		sticky bool
	}{
		{name: "two nodes free", nodes: 2, limit: 60, n: 3000},
		{name: "three nodes pro", nodes: 3, limit: 300, n: 4000},
		{name: "two nodes sticky", nodes: 2, limit: 60, n: 3000, sticky: true},
		{name: "three nodes tiny", nodes: 3, limit: 2, n: 300},
	}
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls := sharedLimiters(t, tc.nodes)
			rng := rand.New(rand.NewPCG(2, uint64(tc.limit)))
			times := requestTimes(rng, base, tc.n)
			var allowed []time.Time
			node := 0
			for _, now := range times {
				if !tc.sticky || rng.IntN(50) == 0 {
					node = rng.IntN(tc.nodes)
				}
				if wantDecision(t, ls[node].Allow("acme", tc.limit, now), now, tc.limit) {
					allowed = append(allowed, now)
				}
			}
			wantWithinLimit(t, allowed, tc.limit, fmt.Sprintf(" on %d nodes", tc.nodes))
			// Each of the five minutes is busy (hundreds of requests):
			// the cluster allows its plan less at most a block per node
			// (and a lapsed lease's share now and then), far from none.
			if min := 5 * (tc.limit - tc.nodes*rateBlock(tc.limit)) / 2; len(allowed) < min {
				t.Fatalf("only %d allowed over five minutes on %d nodes (want at least %d)", len(allowed), tc.nodes, min)
			}
		})
	}
}

// Alone on the ledger a node has the whole budget, exactly as a
// process-local limiter: the same decisions, request by request.
func TestSharedLimitAloneIsExact(t *testing.T) {
	shared := sharedLimiters(t, 1)[0]
	local := New()
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 3))
	now := base
	for i := 0; i < 3000; i++ {
		now = now.Add(time.Duration(rng.Int64N(int64(200 * time.Millisecond))))
		want := local.Allow("acme", 60, now)
		got := shared.Allow("acme", 60, now)
		if got != want {
			t.Fatalf("request %d at %v: shared %+v, local %+v", i, now, got, want)
		}
	}
}

// While the ledger cannot be reached the limiter neither hangs nor
// refuses: it counts alone (fails open) and says so once in the log; the
// process's own log still bounds the key.
func TestSharedLimitFailsOpenWithoutNATS(t *testing.T) {
	srv := eventstoretest.Server(t, t.TempDir())
	store := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	ledger, err := kv.OpenRateLimits(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := kv.OpenRateLimits(context.Background(), eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe)))
	if err != nil {
		t.Fatal(err)
	}
	l := NewShared(ledger, "acct:", "a", quiet)
	other := NewShared(peer, "acct:", "b", quiet)
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i := range 30 { // b takes half the budget
		if !other.Allow("acme", 60, t0).Allowed {
			t.Fatalf("b's request %d refused", i)
		}
	}
	for i := range 30 {
		if !l.Allow("acme", 60, t0).Allowed {
			t.Fatalf("a's request %d refused", i)
		}
	}
	if l.Allow("acme", 60, t0).Allowed {
		t.Fatal("the 61st request of the cluster was allowed")
	}
	srv.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for store.Healthy() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // poll: the client notices the lost connection on its own
	}
	t1 := t0.Add(2 * time.Second) // past the refusal's retry
	for i := range 30 {
		if d := l.Allow("acme", 60, t1); !d.Allowed {
			t.Fatalf("request %d without NATS refused: %+v", i, d)
		}
	}
	t2 := t1
	if d := l.Allow("acme", 60, t2); d.Allowed || d.Remaining != 0 {
		t.Fatalf("the process's own 61st request: %+v", d)
	}
}

// A node that dies holding the whole budget keeps it from the others only
// until its lease lapses (rateLease after its last update, plus the clock
// skew allowed): then the survivor gets the plan.
func TestDeadNodesShareLapses(t *testing.T) {
	ls := sharedLimiters(t, 2)
	dead, survivor := ls[0], ls[1]
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i := range 60 {
		if !dead.Allow("acme", 60, t0).Allowed {
			t.Fatalf("request %d refused", i)
		}
	}
	if d := survivor.Allow("acme", 60, t0.Add(Window)); d.Allowed {
		t.Fatal("the survivor was allowed while the dead node's lease runs")
	}
	lapsed := t0.Add(rateLease + kv.RateSkew + time.Second)
	for i := range 60 {
		if d := survivor.Allow("acme", 60, lapsed); !d.Allowed {
			t.Fatalf("after the lease lapsed, request %d refused: %+v", i, d)
		}
	}
}

// When NATS is reached but the ledger does not answer (a cluster whose
// rate bucket lost its quorum or elects a leader), a node keeps to the
// share it holds. Counting alone instead, two API nodes whose ledger's
// stream leader was killed let 2x the plan through.
func TestSharedLimitKeepsItsShareWhileTheLedgerElects(t *testing.T) {
	c := eventstoretest.StartCluster(t, 3)
	ledger, err := kv.OpenRateLimits(context.Background(), c.Open(0, 3))
	if err != nil {
		t.Fatal(err)
	}
	l := NewShared(ledger, "acct:", "a", quiet)
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if !l.Allow("acme", 60, t0).Allowed {
		t.Fatal("first request refused")
	}
	l.mu.Lock()
	share := l.logs["acme"].share
	l.mu.Unlock()
	if share >= 60 {
		t.Skipf("the node took the whole budget (%d): nothing to keep to", share)
	}
	c.Nodes[1].Shutdown()
	c.Nodes[2].Shutdown()
	allowed := 1
	for range 60 {
		if l.Allow("acme", 60, t0.Add(2*time.Second)).Allowed {
			allowed++
		}
	}
	if !ledger.Connected() {
		t.Fatal("the test means a connected node whose ledger does not answer")
	}
	if allowed > share {
		t.Fatalf("%d allowed while the ledger did not answer, but the node held a share of %d", allowed, share)
	}
}
