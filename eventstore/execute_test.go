package eventstore_test

import (
	"context"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// Execute and Current run on any Log, such as the narrower interface a
// caller holds around the store: what they decide is the same as on the
// *Store itself.
func TestExecuteOnALogThatIsNotAStore(t *testing.T) {
	ctx := context.Background()
	var log eventstore.Log = struct{ eventstore.Log }{eventstoretest.Run(t)}
	id := domain.AccountStream("acme")
	res, err := eventstore.Execute[domain.Account](ctx, log, id, domain.CreateAccount{Slug: "acme", Plan: domain.PlanFree})
	if err != nil || !res.State.Created || len(res.Events) != 1 || res.LastSeq() == 0 {
		t.Fatalf("create: %+v, %v", res, err)
	}
	if _, err := eventstore.Execute[domain.Account](ctx, log, id, domain.CreateAccount{Slug: "acme", Plan: domain.PlanFree}); domain.KindOf(err) != domain.Conflict {
		t.Fatalf("create again: %v, want a conflict", err)
	}
	acc, err := eventstore.Current[domain.Account](ctx, log, id)
	if err != nil || !acc.Created || acc.Plan != domain.PlanFree {
		t.Fatalf("current: %+v, %v", acc, err)
	}
}
