package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/projections"
)

// gate holds the read models of a test API back: while it is held the
// projector is handed no event (its reader of the stream waits), and each
// wait for the read models is reported.
type gate struct {
	Projector                   // the API's own, whose waits are reported
	store     *eventstore.Store // what the projector reads, through Tail
	waits     chan uint64

	mu   sync.Mutex
	held bool
	open chan struct{} // closed when the gate opens
}

func (g *gate) Tail(ctx context.Context, from uint64, fn func(domain.Event, bool) error) error {
	return g.store.Tail(ctx, from, func(e domain.Event, caughtUp bool) error {
		g.mu.Lock()
		held, open := g.held, g.open
		g.mu.Unlock()
		if held {
			select {
			case <-open:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return fn(e, caughtUp)
	})
}

func (g *gate) LastSeq(ctx context.Context) (uint64, error) { return g.store.LastSeq(ctx) }

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.open = true, make(chan struct{})
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = false
	close(g.open)
}

func (g *gate) WaitFor(ctx context.Context, seq uint64) error {
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held {
		g.waits <- seq
	}
	return g.Projector.WaitFor(ctx, seq)
}

// run sends a request while the gate is held and reports whether it
// waited for the read models before it answered (the gate opens then).
func (g *gate) run(req func() response) (response, bool) {
	done := make(chan response, 1)
	go func() { done <- req() }()
	select {
	case r := <-done:
		return r, false
	case <-g.waits:
		g.release()
		return <-done, true
	}
}

// gated is an API whose read models can be held back, with every
// account's writes applied so far.
func gated(t *testing.T, configure ...func(*Config)) (*testAPI, *gate, func()) {
	t.Helper()
	g := &gate{waits: make(chan uint64, 8)}
	a := newTestAPIFrom(t, func(s *eventstore.Store) projections.EventSource { g.store = s; return g },
		append(configure, func(c *Config) { g.Projector = c.Projector; c.Projector = g })...)
	settleAll := func() {
		t.Helper()
		last, err := a.store.LastSeq(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		a.settle(last)
	}
	return a, g, settleAll
}

// A write whose answer comes from the write itself does not wait for the
// read models; the same account's next request does, so it reads the
// write; another account's requests never wait for it.
func TestWritesAnswerAtOnceAndTheAccountReadsThem(t *testing.T) {
	a, g, settleAll := gated(t)
	acme := a.account("acme", domain.PlanPro)
	globex := a.account("globex", domain.PlanPro)

	send := func(method, path, key, body string) (response, bool) {
		return g.run(func() response { return a.do(method, path, key, body) })
	}

	settleAll() // each account's own collection "main" included
	g.hold()
	r, waited := send("POST", "/v1/collections", acme, `{"slug":"talks","name":"Talks"}`)
	if r.status != 201 || waited {
		t.Fatalf("POST /v1/collections: %d (waited for the read models: %v) %s", r.status, waited, r.body)
	}
	// A creation decides on its own new stream: it does not wait for the
	// account's earlier writes either, and the stream still refuses a
	// slug taken a moment ago.
	r, waited = send("POST", "/v1/collections", acme, `{"slug":"films","name":"Films"}`)
	if r.status != 201 || waited {
		t.Fatalf("the account's second POST /v1/collections: %d (waited: %v) %s", r.status, waited, r.body)
	}
	r, waited = send("POST", "/v1/collections", acme, `{"slug":"talks","name":"Again"}`)
	if r.status != 409 || waited {
		t.Fatalf("POST /v1/collections of a slug just taken: %d (waited: %v) %s", r.status, waited, r.body)
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
	if seq := a.s.own.pending("acme", g.Applied(), allWrites); seq != 0 {
		t.Fatalf("still waiting for %d", seq)
	}
}

// An upload that does not come as the account (on a direct upload URL)
// still decides on the account's writes before it: a collection deleted a
// moment ago takes no more videos.
func TestADirectUploadSeesItsCollectionDeleted(t *testing.T) {
	a, g, settleAll := gated(t)
	key := a.account("acme", domain.PlanPro)
	if r := a.do("POST", "/v1/collections", key, `{"slug":"talks","name":"Talks"}`); r.status != 201 {
		t.Fatalf("POST /v1/collections: %d %s", r.status, r.body)
	}
	r := a.do("POST", "/v1/uploads", key, `{"collection":"talks"}`)
	var d struct{ URL string }
	if err := json.Unmarshal(r.body, &d); err != nil || r.status != 201 {
		t.Fatalf("POST /v1/uploads: %d %s", r.status, r.body)
	}
	file := []byte("\x00\x00\x00\x18ftypmp42 a video")
	cr := a.tusReq("POST", d.URL, "", map[string]string{"Upload-Length": strconv.Itoa(len(file)), "Upload-Metadata": tusMeta("filename", "d.mp4")}, nil)
	wantStatus(t, cr, 201)
	settleAll()
	g.hold()
	if r, waited := g.run(func() response { return a.do("DELETE", "/v1/collections/talks", key, "") }); r.status != 200 || waited {
		t.Fatalf("DELETE /v1/collections/talks: %d (waited: %v) %s", r.status, waited, r.body)
	}
	r, waited := g.run(func() response {
		return a.tusPatch(cr.header.Get("Location"), "", 0, file)
	})
	if r.status != 404 || !waited || !strings.Contains(string(r.body), "talks") {
		t.Fatalf("the upload's last PATCH after its collection's DELETE: %d (waited: %v) %s", r.status, waited, r.body)
	}
}

// A key revoked while the read models lag more than a settle waits for
// (the revocation answers anyway), by a user of the account or by the
// operator, is refused by the account's next request, a read or a
// creation that waits for nothing else: that request waits for the
// revocation, then looks at its key again.
func TestAKeyRevokedPastTheSettleWaitIsRefusedOnceApplied(t *testing.T) {
	a, g, settleAll := gated(t, withUsers(t), func(c *Config) {
		// The write's own settle gives up after it; the next
		// request's wait, once the gate opens, must not: a loaded
		// machine's projector takes more than 50 ms to apply and fsync.
		c.SettleTimeout = time.Second
		c.Admin.Token = testAdminToken
	})
	a.account("acme", domain.PlanFree)
	ada := a.user("ada@example.com", "acme")
	for _, next := range []struct{ by, method, path, body string }{
		{"user", "GET", "/v1/videos", ""},
		{"user", "POST", "/v1/collections", `{"slug":"talks","name":"Talks"}`},
		{"operator", "GET", "/v1/videos", ""},
		{"operator", "POST", "/v1/collections", `{"slug":"films","name":"Films"}`},
	} {
		r := a.post("/v1/keys", `{"label":"ci"}`, ada)
		var created struct{ ID, Key string }
		if err := json.Unmarshal(r.body, &created); err != nil || r.status != 201 {
			t.Fatalf("create key: %d %s", r.status, r.body)
		}
		if r := a.do("GET", "/v1/videos", created.Key, ""); r.status != 200 {
			t.Fatalf("the new key: %d %s", r.status, r.body)
		}
		settleAll()
		g.hold()
		var revoke response
		if next.by == "operator" {
			revoke = a.do("DELETE", "/v1/admin/accounts/acme/keys/"+created.ID, testAdminToken, "")
		} else {
			revoke = a.send("DELETE", "/v1/keys/"+created.ID, "", ada)
		}
		if revoke.status != 204 {
			t.Fatalf("revoke by the %s: %d %s", next.by, revoke.status, revoke.body)
		}
		for len(g.waits) > 0 { // the revocation's own settle, given up
			<-g.waits
		}
		r, waited := g.run(func() response { return a.do(next.method, next.path, created.Key, next.body) })
		if r.status != 401 || !waited {
			t.Fatalf("the key revoked by the %s, its next request %s %s: %d (waited: %v) %s", next.by, next.method, next.path, r.status, waited, r.body)
		}
	}
}

// A password set from a link while the read models lag more than a settle
// waits for ends the sessions begun before it at once: the next request
// with one (an account user's, or an operator's on /v1/admin) waits for
// the new password, then looks at its session again.
func TestAPasswordSetPastTheSettleWaitEndsOldSessionsOnceApplied(t *testing.T) {
	a, g, settleAll := gated(t, withUsers(t), func(c *Config) {
		// The write's own settle gives up after it; the next
		// request's wait, once the gate opens, must not: a loaded
		// machine's projector takes more than 50 ms to apply and fsync.
		c.SettleTimeout = time.Second
		c.Admin.Token = testAdminToken
	})
	a.account("acme", domain.PlanFree)
	for _, who := range []struct{ email, account, path string }{
		{"ada@example.com", "acme", "/v1/videos"},
		{"ops@example.com", "", "/v1/admin/accounts"},
	} {
		old := a.user(who.email, who.account)
		if r := a.send("GET", who.path, "", old); r.status != 200 {
			t.Fatalf("%s before: %d %s", who.email, r.status, r.body)
		}
		res, token, err := a.s.cfg.Users.IssuePasswordLink(context.Background(), who.email, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		a.settle(res.LastSeq())
		settleAll()
		g.hold()
		if r := a.post("/auth/password", `{"token":"`+token+`","password":"another long password"}`, nil); r.status != 200 {
			t.Fatalf("%s new password: %d %s", who.email, r.status, r.body)
		}
		for len(g.waits) > 0 { // the password's own settle, given up
			<-g.waits
		}
		r, waited := g.run(func() response { return a.send("GET", who.path, "", old) })
		if r.status != 401 || !waited {
			t.Fatalf("%s's session begun before the new password: %d (waited: %v) %s", who.email, r.status, waited, r.body)
		}
	}
}
