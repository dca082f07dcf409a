package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
)

func TestRacingAppendsExactlyOneWins(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	id := domain.StreamID{Aggregate: domain.AggAccount, ID: "acme"}
	if _, err := s.Append(ctx, id, 0, []domain.Payload{domain.AccountCreated{Plan: domain.PlanFree}}); err != nil {
		t.Fatal(err)
	}
	_, last, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := s.Append(ctx, id, last, []domain.Payload{domain.PlanChanged{Plan: domain.PlanPro}})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, eventstore.ErrConcurrency) && domain.IsKind(err, domain.Conflict):
				conflicts.Add(1)
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 || conflicts.Load() != 15 {
		t.Fatalf("wins=%d conflicts=%d, want 1 and 15", wins.Load(), conflicts.Load())
	}
	events, _, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 {
		t.Fatalf("stored %d events, want 2", len(events))
	}
}

// Execute retries on conflicts, so concurrent commands that all remain valid
// after each other's events all land.
func TestExecuteRetriesOnConflict(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	id := domain.StreamID{Aggregate: domain.AggAccount, ID: "acme"}
	if _, err := eventstore.Execute[domain.Account](ctx, s, id, domain.CreateAccount{Slug: "acme", Plan: domain.PlanFree}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hash := domain.HashKey(s.NewID())
			if _, err := eventstore.Execute[domain.Account](ctx, s, id, domain.IssueKey{KeyID: s.NewID(), Hash: hash}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	events, _, err := s.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	acct := domain.Fold[domain.Account](events)
	if len(acct.Keys) != 4 {
		t.Fatalf("account has %d keys, want 4", len(acct.Keys))
	}
	// A second create is a domain conflict, not retried into success.
	_, err = eventstore.Execute[domain.Account](ctx, s, id, domain.CreateAccount{Slug: "acme", Plan: domain.PlanFree})
	if !domain.IsKind(err, domain.Conflict) || errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("second create: got %v, want a domain conflict", err)
	}
}

func TestLoadAndScanKeepOrderAndFilters(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	a := domain.CollectionStream("acme", "a")
	b := domain.CollectionStream("acme", "b")
	mustExec := func(id domain.StreamID, cmd any) {
		t.Helper()
		if _, err := eventstore.Execute[domain.Collection](ctx, s, id, cmd); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(a, domain.CreateCollection{Account: "acme", Slug: "a", Name: "A"})
	mustExec(b, domain.CreateCollection{Account: "acme", Slug: "b", Name: "B"})
	mustExec(a, domain.RenameCollection{Account: "acme", Name: "A2"})

	events, last, err := s.Load(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Type != domain.TypeCollectionCreated || events[1].Type != domain.TypeCollectionRenamed {
		t.Fatalf("load a: %+v", events)
	}
	if last != events[1].Seq || last != 3 {
		t.Fatalf("last seq %d, want 3", last)
	}
	if events[0].ID == "" || events[0].OccurredAt.IsZero() || events[0].Version != 1 {
		t.Fatalf("envelope not filled: %+v", events[0])
	}

	var seen []uint64
	if err := s.Scan(ctx, []string{"collection.*.CollectionCreated"}, func(e domain.Event) error {
		seen = append(seen, e.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("scan saw %v, want [1 2]", seen)
	}
	// A filter that matches nothing returns at once.
	if err := s.Scan(ctx, []string{"video.*.UploadAccepted"}, func(domain.Event) error { t.Fatal("unexpected event"); return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestTailFollowsNewEvents(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan domain.Event, 10)
	done := make(chan error, 1)
	go func() {
		done <- s.Tail(ctx, 1, func(e domain.Event, _ bool) error { got <- e; return nil })
	}()
	for i, slug := range []string{"a", "b", "c"} {
		if _, err := eventstore.Execute[domain.Account](ctx, s, domain.StreamID{Aggregate: domain.AggAccount, ID: slug}, domain.CreateAccount{Slug: slug, Plan: domain.PlanFree}); err != nil {
			t.Fatal(err)
		}
		e := <-got
		if e.Seq != uint64(i+1) || e.AggregateID != slug {
			t.Fatalf("tail got seq %d %s, want %d %s", e.Seq, e.AggregateID, i+1, slug)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("tail ended with %v", err)
	}
}

// A subscription's stream also holds every delivery attempt; deciding
// reads only its lifecycle events, yet still expects the stream's true
// last sequence.
func TestDecisionTypedAggregateLoadsOnlyWhatDecides(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	id := domain.StreamID{Aggregate: domain.AggWebhook, ID: s.NewID()}
	if _, err := eventstore.Execute[domain.Webhook](ctx, s, id, domain.SubscribeWebhook{Account: "acme", URL: "https://x.test/", Events: []string{"video.completed"}, SealedSecret: "sealed.v1." + strings.Repeat("s", 40)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := s.Record(ctx, id, domain.DeliveryFailed{Account: "acme", Attempt: i + 1, Error: "HTTP 500"}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := eventstore.Current[domain.Webhook](ctx, s, id)
	if err != nil || !w.Wants("video.completed") || w.SealedSecret == "" {
		t.Fatalf("current %+v %v", w, err)
	}
	res, err := eventstore.Execute[domain.Webhook](ctx, s, id, domain.DeleteWebhook{Account: "acme"})
	if err != nil || len(res.Events) != 1 || res.Events[0].Seq != 52 {
		t.Fatalf("delete after 50 attempts: %+v %v", res.Events, err)
	}
	if _, err := eventstore.Execute[domain.Webhook](ctx, s, id, domain.DeleteWebhook{Account: "acme"}); !domain.IsKind(err, domain.NotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// A work consumer created starting at the stream's beginning keeps that
// start when later configured to start at its end (the server refuses to
// change it): the worker still runs and gets new jobs.
func TestWorkKeepsAnExistingConsumersStart(t *testing.T) {
	s := eventstoretest.Run(t)
	for i, onlyNew := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		jobs := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- queue.New(s).Work(ctx, queue.WorkConfig{Durable: "w", FilterSubjects: []string{"account.*.AccountCreated"}, OnlyNew: onlyNew},
				func(ctx context.Context, j *queue.Job) { _ = j.Ack(ctx); jobs <- j.Event.AggregateID })
		}()
		slug := fmt.Sprintf("acct-%d", i)
		if _, err := eventstore.Execute[domain.Account](context.Background(), s, domain.StreamID{Aggregate: domain.AggAccount, ID: slug}, domain.CreateAccount{Slug: slug, Plan: domain.PlanFree}); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-jobs:
			if got != slug {
				t.Fatalf("job %s, want %s", got, slug)
			}
		case err := <-done:
			t.Fatalf("work (onlyNew=%v) ended: %v", onlyNew, err)
		}
		cancel()
		<-done
	}
}
