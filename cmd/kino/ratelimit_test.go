package main

import (
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/seal"
)

// Two kino serve processes on one NATS (the second joins the first's
// embedded server, as a second API node behind a balancer would) share an
// account's plan: 150 requests of a free account, alternating between the
// nodes within one frozen minute, get at most 60 answers between them
// (and 60 less at most a block per node), the rest 429. Before the limits
// were shared each node allowed 60 of its own: 120.
func TestTwoServeProcessesShareOneRateLimit(t *testing.T) {
	t.Parallel()
	a := start(t, t.TempDir())
	// A second API node shares the first's secret key, as a cluster's do.
	b := start(t, t.TempDir(), func(c *Config) {
		c.NATSURL, c.NATSAuth, c.SecretKeyFile = a.nats, a.natsAuth, filepath.Join(a.data, seal.KeyFile)
	})
	key := a.account("acme", domain.PlanFree)
	b.settle()
	ok := 0
	for i := 0; i < 150; i++ {
		node := a
		if i%2 == 1 {
			node = b
		}
		r := node.do("GET", "/v1/videos", key, nil)
		switch r.status {
		case 200:
			ok++
		case 429:
			if r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Remaining") != "0" {
				t.Fatalf("429 headers: %v", r.header)
			}
		default:
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	if ok > 60 || ok < 60-2*3 {
		t.Fatalf("%d of 150 requests allowed by two nodes; the free plan allows 60 a minute (slack: a block of 3 per node)", ok)
	}
}
