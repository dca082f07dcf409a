package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// countingLog counts the loads Execute makes.
type countingLog struct {
	eventstore.Log
	loads int
}

func (c *countingLog) Load(ctx context.Context, id domain.StreamID) ([]domain.Event, uint64, error) {
	c.loads++
	return c.Log.Load(ctx, id)
}

// A creation is appended without loading the aggregate first; creating
// one that exists fails the append's expectation, stores nothing, and is
// refused by the aggregate itself on its loaded state.
func TestExecuteCreatesWithoutLoading(t *testing.T) {
	ctx := context.Background()
	store := eventstoretest.Run(t)
	log := &countingLog{Log: store}
	id := domain.CollectionStream("acme", "talks")
	create := domain.CreateCollection{Account: "acme", Slug: "talks", Name: "Talks"}
	res, err := eventstore.Execute[domain.Collection](ctx, log, id, create)
	if err != nil || len(res.Events) != 1 || res.State.Name != "Talks" || log.loads != 0 {
		t.Fatalf("create: %+v, %v, %d loads", res, err, log.loads)
	}
	_, err = eventstore.Execute[domain.Collection](ctx, log, id, create)
	if domain.KindOf(err) != domain.Conflict || errors.Is(err, eventstore.ErrConcurrency) || log.loads != 1 {
		t.Fatalf("create again: %v after %d loads, want the collection's own conflict after one", err, log.loads)
	}
	events, _, err := store.Load(ctx, id)
	if err != nil || len(events) != 1 {
		t.Fatalf("stored: %d events, %v", len(events), err)
	}
	// A command the empty state refuses is decided on the loaded state.
	res2, err := eventstore.Execute[domain.Collection](ctx, log, id, domain.RenameCollection{Account: "acme", Name: "Talks 2"})
	if err != nil || res2.State.Name != "Talks 2" {
		t.Fatalf("rename: %+v, %v", res2, err)
	}
}

// Commands on one aggregate from one process run one at a time: eight
// writers renaming one collection all land, none refused for writing
// after another (raced, about a quarter were), and every rename is an event.
func TestExecuteSerializesOneAggregate(t *testing.T) {
	ctx := context.Background()
	store := eventstoretest.Run(t)
	id := domain.CollectionStream("acme", "talks")
	if _, err := eventstore.Execute[domain.Collection](ctx, store, id, domain.CreateCollection{Account: "acme", Slug: "talks", Name: "Talks"}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 5
	var mu sync.Mutex
	var wg sync.WaitGroup
	refused := 0
	for w := range writers {
		wg.Go(func() {
			for k := range each {
				_, err := eventstore.Execute[domain.Collection](ctx, store, id, domain.RenameCollection{Account: "acme", Name: fmt.Sprintf("Talks %d.%d", w, k)})
				if err != nil {
					mu.Lock()
					refused++
					mu.Unlock()
					if domain.KindOf(err) != domain.Conflict {
						t.Errorf("rename: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	if refused != 0 {
		t.Fatalf("%d of %d renames refused", refused, writers*each)
	}
	events, _, err := store.Load(ctx, id)
	if err != nil || len(events) != 1+writers*each {
		t.Fatalf("stored %d events, %v; want %d", len(events), err, 1+writers*each)
	}
}
