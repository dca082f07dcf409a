package httpapi

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
)

// sharedLimiters are n limiters (API nodes) sharing one ledger on a real
// embedded NATS, each on its own connection.
func sharedLimiters(t *testing.T, n int) []*limiter {
	t.Helper()
	srv := eventstoretest.Server(t, t.TempDir())
	var ls []*limiter
	for i := range n {
		ledger, err := kv.OpenRateLimits(context.Background(), eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe)))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, newSharedLimiter(ledger, "acct:", "node-"+strconv.Itoa(i), quiet))
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
			times := make([]time.Time, tc.n)
			for i := range times {
				if i%3 == 0 {
					m := time.Duration(rng.IntN(5)+1) * time.Minute
					times[i] = base.Add(m + time.Duration(rng.IntN(2000)-1000)*time.Millisecond)
				} else {
					times[i] = base.Add(time.Duration(rng.Int64N(int64(5 * time.Minute))))
				}
			}
			sortTimes(times)
			var allowed []time.Time
			node := 0
			for _, now := range times {
				if !tc.sticky || rng.IntN(50) == 0 {
					node = rng.IntN(tc.nodes)
				}
				d := ls[node].allow("acme", tc.limit, now)
				if d.allowed {
					allowed = append(allowed, now)
				} else if d.retry <= 0 || d.retry > rateWindow {
					t.Fatalf("refused at %v with retry %v", now, d.retry)
				}
				if d.remaining < 0 || d.remaining >= tc.limit {
					t.Fatalf("remaining %d", d.remaining)
				}
			}
			for i := range allowed {
				j := i
				for j < len(allowed) && allowed[j].Sub(allowed[i]) < rateWindow {
					j++
				}
				if j-i > tc.limit {
					t.Fatalf("%d requests allowed within 60 s from %v on %d nodes (limit %d)", j-i, allowed[i], tc.nodes, tc.limit)
				}
			}
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
	local := newLimiter()
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 3))
	now := base
	for i := 0; i < 3000; i++ {
		now = now.Add(time.Duration(rng.Int64N(int64(200 * time.Millisecond))))
		want := local.allow("acme", 60, now)
		got := shared.allow("acme", 60, now)
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
	l := newSharedLimiter(ledger, "acct:", "a", quiet)
	other := newSharedLimiter(peer, "acct:", "b", quiet)
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i := range 30 { // b takes half the budget
		if !other.allow("acme", 60, t0).allowed {
			t.Fatalf("b's request %d refused", i)
		}
	}
	for i := range 30 {
		if !l.allow("acme", 60, t0).allowed {
			t.Fatalf("a's request %d refused", i)
		}
	}
	if l.allow("acme", 60, t0).allowed {
		t.Fatal("the 61st request of the cluster was allowed")
	}
	srv.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for store.Healthy() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // poll: the client notices the lost connection on its own
	}
	t1 := t0.Add(2 * time.Second) // past the refusal's retry
	for i := range 30 {
		if d := l.allow("acme", 60, t1); !d.allowed {
			t.Fatalf("request %d without NATS refused: %+v", i, d)
		}
	}
	t2 := t1
	if d := l.allow("acme", 60, t2); d.allowed || d.remaining != 0 {
		t.Fatalf("the process's own 61st request: %+v", d)
	}
}

// Two API nodes (two Servers with their own limiters) on one NATS share an
// account's plan: 200 concurrent requests of a free account across a
// minute boundary, spread over both nodes, get at most 60 answers between
// them, and at least 60 less a block per node.
func TestTwoAPINodesShareOneAccountsLimit(t *testing.T) {
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	s2, err := New(a.s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(s2.Handler())
	t.Cleanup(srv2.Close)
	urls := []string{a.srv.URL, srv2.URL}
	var ok, limited atomic.Int64
	burst := func(at time.Time) {
		a.clock.Set(at)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, _ := http.NewRequest("GET", urls[i%2]+"/v1/videos", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					ok.Add(1)
				case 429:
					limited.Add(1)
					if resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-RateLimit-Remaining") != "0" {
						t.Errorf("429 headers: %v", resp.Header)
					}
				default:
					t.Errorf("status %d", resp.StatusCode)
				}
			}()
		}
		close(start)
		wg.Wait()
	}
	burst(time.Date(2026, 11, 22, 12, 1, 59, 500e6, time.UTC))
	burst(time.Date(2026, 11, 22, 12, 2, 0, 500e6, time.UTC))
	if n := ok.Load(); n > 60 || n < 60-2*int64(rateBlock(60)) {
		t.Fatalf("%d allowed, %d limited across the boundary on two nodes; want at most 60 and at least %d", n, limited.Load(), 60-2*rateBlock(60))
	}
	// A minute after the first burst the budget is back, on either node.
	a.clock.Set(time.Date(2026, 11, 22, 12, 2, 59, 500e6, time.UTC))
	for _, u := range urls {
		req, _ := http.NewRequest("GET", u+"/v1/videos", nil)
		if r := a.request(req, key); r.status != 200 || r.header.Get("X-RateLimit-Limit") != "60" {
			t.Fatalf("a minute later on %s: %d %v", u, r.status, r.header)
		}
	}
}

// Wrong keys count against the client address on every node together:
// two on A and two on B use up a limit of 4, and then both nodes refuse
// the address, a right key included.
func TestAddressLimitIsSharedAcrossNodes(t *testing.T) {
	a := newTestAPI(t, func(c *Config) { c.AuthFailuresPerMinute = 4 })
	key := a.account("acme", domain.PlanPro)
	s2, err := New(a.s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(s2.Handler())
	t.Cleanup(srv2.Close)
	bad := domain.KeyPrefix + "0000000000000000000000000000000x"
	on := func(u, k string) response {
		req, _ := http.NewRequest("GET", u+"/v1/videos", nil)
		return a.request(req, k)
	}
	for _, u := range []string{a.srv.URL, a.srv.URL, srv2.URL, srv2.URL} {
		wantError(t, on(u, bad), 401, "Invalid API key")
	}
	wantError(t, on(a.srv.URL, bad), 429, "Rate limit exceeded")
	wantError(t, on(srv2.URL, bad), 429, "Rate limit exceeded")
	wantError(t, on(srv2.URL, key), 429, "Rate limit exceeded")
	a.clock.Set(a.clock.Now().Add(time.Minute))
	if r := on(srv2.URL, key); r.status != 200 {
		t.Fatalf("a minute later: %d", r.status)
	}
}

// An account's concurrent uploads are bounded across API nodes: a free
// account (two at once) holding one slow upload on each node is refused a
// third on either, and once one ends the other node takes one again.
func TestUploadSlotsAreSharedAcrossNodes(t *testing.T) {
	a := newTestAPI(t)
	keyA := a.account("alpha", domain.PlanFree)
	s2, err := New(a.s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := *a
	b.s, b.srv = s2, httptest.NewServer(s2.Handler())
	t.Cleanup(b.srv.Close)
	first := a.slowUpload(keyA)
	poll(t, "A's upload on node 1", func() bool { return a.s.uploads.count("alpha") == 1 })
	second := b.slowUpload(keyA)
	poll(t, "A's upload on node 2", func() bool { return s2.uploads.count("alpha") == 1 })
	for _, n := range []*testAPI{a, &b} {
		wantError(t, n.slowUpload(keyA).response(t), 429, "Rate limit exceeded")
	}
	first.conn.Close()
	poll(t, "the upload on node 1 to end", func() bool { return a.s.uploads.count("alpha") == 0 })
	third := b.slowUpload(keyA)
	poll(t, "a second upload on node 2", func() bool { return s2.uploads.count("alpha") == 2 })
	second.conn.Close()
	third.conn.Close()
}

// A node that dies holding the whole budget keeps it from the others only
// until its lease lapses (rateLease after its last update, plus the clock
// skew allowed): then the survivor gets the plan.
func TestDeadNodesShareLapses(t *testing.T) {
	ls := sharedLimiters(t, 2)
	dead, survivor := ls[0], ls[1]
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i := range 60 {
		if !dead.allow("acme", 60, t0).allowed {
			t.Fatalf("request %d refused", i)
		}
	}
	if d := survivor.allow("acme", 60, t0.Add(rateWindow)); d.allowed {
		t.Fatal("the survivor was allowed while the dead node's lease runs")
	}
	lapsed := t0.Add(rateLease + kv.RateSkew + time.Second)
	for i := range 60 {
		if d := survivor.allow("acme", 60, lapsed); !d.allowed {
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
	l := newSharedLimiter(ledger, "acct:", "a", quiet)
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if !l.allow("acme", 60, t0).allowed {
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
		if l.allow("acme", 60, t0.Add(2*time.Second)).allowed {
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
