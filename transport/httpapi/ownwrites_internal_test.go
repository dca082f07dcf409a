package httpapi

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/kino-video/kino/domain"
)

// gatedProjector is the real projector seen through a gate: while held,
// the read models look stuck where they were, and every wait for them
// is reported and lasts until the gate opens.
type gatedProjector struct {
	Projector
	waits    chan uint64
	released chan struct{}

	mu     sync.Mutex
	held   bool
	frozen uint64
}

func (g *gatedProjector) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.frozen = true, g.Projector.Applied()
}

func (g *gatedProjector) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	close(g.released)
}

func (g *gatedProjector) Applied() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		return g.frozen
	}
	return g.Projector.Applied()
}

func (g *gatedProjector) WaitFor(ctx context.Context, seq uint64) error {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held {
		g.waits <- seq
		<-g.released
	}
	return g.Projector.WaitFor(ctx, seq)
}

// A write whose answer comes from the write itself does not wait for the
// read models; the same account's next request does, so it reads the
// write; another account's requests never wait for it.
func TestWritesAnswerAtOnceAndTheAccountReadsThem(t *testing.T) {
	g := &gatedProjector{waits: make(chan uint64, 8), released: make(chan struct{})}
	a := newTestAPI(t, func(c *Config) { g.Projector = c.Projector; c.Projector = g })
	acme := a.account("acme", domain.PlanPro)
	globex := a.account("globex", domain.PlanPro)

	// send runs a request and reports whether it waited for the read
	// models before it answered.
	send := func(method, path, key, body string) (response, bool) {
		t.Helper()
		done := make(chan response, 1)
		go func() { done <- a.do(method, path, key, body) }()
		select {
		case r := <-done:
			return r, false
		case <-g.waits:
			g.release()
			return <-done, true
		}
	}

	last, err := a.store.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a.settle(last) // each account's own collection "main" included
	g.hold()
	r, waited := send("POST", "/v1/collections", acme, `{"slug":"talks","name":"Talks"}`)
	if r.status != 201 || waited {
		t.Fatalf("POST /v1/collections: %d (waited for the read models: %v) %s", r.status, waited, r.body)
	}
	r, waited = send("GET", "/v1/collections", globex, "")
	if r.status != 200 || waited {
		t.Fatalf("another account's GET: %d (waited: %v) %s", r.status, waited, r.body)
	}
	r, waited = send("GET", "/v1/collections/talks", acme, "")
	if r.status != 200 || !waited || !strings.Contains(string(r.body), `"name":"Talks"`) {
		t.Fatalf("the account's GET after its POST: %d (waited: %v) %s", r.status, waited, r.body)
	}
	// Caught up, the account is forgotten: nothing more to wait for.
	if seq := a.s.own.pending("acme", g.Applied()); seq != 0 {
		t.Fatalf("still waiting for %d", seq)
	}
}
