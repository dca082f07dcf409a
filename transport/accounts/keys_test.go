package accounts_test

import (
	"context"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/accounts"
)

func TestDevBootstrapOnlyOnAnEmptyStore(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	dev, created, err := accounts.DevBootstrap(ctx, s)
	if err != nil || !created {
		t.Fatalf("first DevBootstrap: created %v, %v", created, err)
	}
	if dev.Account != "dev" || dev.Collection != "default" || !domain.WellFormedKey(dev.Key) || dev.KeyID == "" {
		t.Fatalf("DevBootstrap returned %+v", dev)
	}
	acc, err := eventstore.Current[domain.Account](ctx, s, domain.AccountStream("dev"))
	if err != nil {
		t.Fatal(err)
	}
	if acc.Plan != domain.PlanBusiness || len(acc.Keys) != 1 || acc.Keys[0].Hash != domain.HashKey(dev.Key) || acc.Keys[0].ID != dev.KeyID {
		t.Fatalf("dev account: %+v", acc)
	}
	coll, err := eventstore.Current[domain.Collection](ctx, s, domain.CollectionStream("dev", "default"))
	if err != nil || coll.Name != "Default" {
		t.Fatalf("dev collection: %+v, %v", coll, err)
	}
	again, created, err := accounts.DevBootstrap(ctx, s)
	if err != nil || created || again.Key != "" {
		t.Fatalf("second DevBootstrap: %+v, created %v, %v", again, created, err)
	}
}

func TestIssueKeyStoresOnlyItsHash(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	if _, err := eventstore.Execute[domain.Account](ctx, s, domain.AccountStream("acme"), domain.CreateAccount{Slug: "acme", Plan: domain.PlanPro}); err != nil {
		t.Fatal(err)
	}
	key, id, err := accounts.IssueKey(ctx, s, "acme", "ci")
	if err != nil {
		t.Fatal(err)
	}
	events, _, err := s.Load(ctx, domain.AccountStream("acme"))
	if err != nil {
		t.Fatal(err)
	}
	issued, ok := events[len(events)-1].Data.(domain.KeyIssued)
	if !ok || issued.KeyID != id || issued.Hash != domain.HashKey(key) || issued.Label != "ci" || issued.Prefix != key[:len(domain.KeyPrefix)+4] {
		t.Fatalf("last event %+v", events[len(events)-1])
	}
	if _, _, err := accounts.IssueKey(ctx, s, "nobody", "x"); !domain.IsKind(err, domain.NotFound) {
		t.Fatalf("IssueKey for a missing account: %v", err)
	}
}
