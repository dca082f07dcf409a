package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// Two API nodes (two Servers with their own limiters) on one NATS share an
// account's plan: 200 concurrent requests of a free account across a
// minute boundary, spread over both nodes, get at most 60 answers between
// them, and at least 60 less a block per node.
func TestTwoAPINodesShareOneAccountsLimit(t *testing.T) {
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	_, srv2 := a.node()
	urls := []string{a.srv.URL, srv2.URL}
	ok1, limited1 := a.burst(time.Date(2026, 11, 22, 12, 1, 59, 500e6, time.UTC), key, urls)
	ok2, limited2 := a.burst(time.Date(2026, 11, 22, 12, 2, 0, 500e6, time.UTC), key, urls)
	const block = 60 / 20 // a node takes a twentieth of the limit at once (ratelimit)
	if n := ok1 + ok2; n > 60 || n < 60-2*block {
		t.Fatalf("%d allowed, %d limited across the boundary on two nodes; want at most 60 and at least %d", n, limited1+limited2, 60-2*block)
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
	a := newTestAPI(t, func(c *Config) { c.Limits.AuthFailuresPerMinute = 4 })
	key := a.account("acme", domain.PlanPro)
	_, srv2 := a.node()
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
	b := *a
	b.s, b.srv = a.node()
	s2 := b.s
	first := a.slowUpload(keyA)
	eventstoretest.Eventually(t, "A's upload on node 1", func() bool { return a.s.uploads.count("alpha") == 1 })
	second := b.slowUpload(keyA)
	eventstoretest.Eventually(t, "A's upload on node 2", func() bool { return s2.uploads.count("alpha") == 1 })
	for _, n := range []*testAPI{a, &b} {
		wantError(t, n.slowUpload(keyA).response(t), 429, "Rate limit exceeded")
	}
	first.conn.Close()
	eventstoretest.Eventually(t, "the upload on node 1 to end", func() bool { return a.s.uploads.count("alpha") == 0 })
	third := b.slowUpload(keyA)
	eventstoretest.Eventually(t, "a second upload on node 2", func() bool { return s2.uploads.count("alpha") == 2 })
	second.conn.Close()
	third.conn.Close()
}
