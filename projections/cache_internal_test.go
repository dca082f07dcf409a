package projections

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// Authenticate answers from its cache once a key has been read, and never
// answers what an account's later events changed: once the read models
// include a plan change or a revocation, it says so.
func TestAuthenticateForgetsWhatAccountEventsChange(t *testing.T) {
	s, db, p := newFollower(t)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		stop()
		<-done
	}()
	account := func(cmd any) {
		t.Helper()
		r, err := eventstore.Execute[domain.Account](context.Background(), s, domain.AccountStream("acme"), cmd)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.WaitFor(wctx, r.LastSeq()); err != nil {
			t.Fatal(err)
		}
	}
	account(domain.CreateAccount{Slug: "acme", Plan: domain.PlanFree})
	hash := strings.Repeat("ab", 32)
	account(domain.IssueKey{KeyID: "k1", Hash: hash, Prefix: "kino_sk_ab12", Label: "ci"})
	cached := func() bool {
		_, _, ok := db.caches.auth.get(hash)
		return ok
	}
	for range 2 {
		k, a, ok, err := db.Authenticate(hash)
		if err != nil || !ok || k.ID != "k1" || a.Slug != "acme" || a.Plan != domain.PlanFree {
			t.Fatalf("authenticate: %+v %+v %v %v", k, a, ok, err)
		}
	}
	if !cached() {
		t.Fatal("a key read is not kept")
	}
	if _, _, ok, err := db.Authenticate("unknown"); ok || err != nil {
		t.Fatalf("an unknown key: %v %v", ok, err)
	}

	account(domain.ChangePlan{Plan: domain.PlanPro})
	if _, a, ok, _ := db.Authenticate(hash); !ok || a.Plan != domain.PlanPro {
		t.Fatalf("after the plan change: %+v %v", a, ok)
	}
	account(domain.RevokeKey{KeyID: "k1"})
	if k, _, ok, _ := db.Authenticate(hash); ok {
		t.Fatalf("a revoked key still authenticates: %+v", k)
	}
}
