package domain_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// now is the clock every Decide call in these tests sees.
var now = time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// aggregate is what the given/when/then helper needs of a write-side state.
type aggregate[S any] interface {
	domain.State[S]
	Decide(cmd any, now time.Time) ([]domain.Payload, error)
}

// decideCase is one given/when/then row: the history, the command, and
// either the payloads Decide must emit or the kind of error it must return.
type decideCase struct {
	name  string
	given []domain.Payload
	when  any
	then  []domain.Payload // nil (with err Other) means accepted with nothing to record
	err   domain.Kind      // Other means no error is expected
}

// history wraps payloads into the events the edge would have stored for
// aggregate id: ids, types, versions, times and sequences as eventstore sets them.
func history(t *testing.T, id string, payloads ...domain.Payload) []domain.Event {
	t.Helper()
	versions := domain.EventTypes()
	events := make([]domain.Event, len(payloads))
	for i, p := range payloads {
		v, ok := versions[p.EventType()]
		if !ok {
			t.Fatalf("given[%d]: %T has unregistered type %q", i, p, p.EventType())
		}
		events[i] = domain.Event{
			ID:          fmt.Sprintf("01JGIVEN%018d", i+1),
			Type:        p.EventType(),
			Version:     v,
			AggregateID: id,
			OccurredAt:  now.Add(time.Duration(i-len(payloads)) * time.Minute),
			Seq:         uint64(i + 1),
			Data:        p,
		}
	}
	return events
}

// given folds payloads into the state of aggregate id.
func given[S domain.State[S]](t *testing.T, id string, payloads ...domain.Payload) S {
	t.Helper()
	return domain.Fold[S](history(t, id, payloads...))
}

// runDecide runs each case as a subtest: fold the history, decide, compare.
func runDecide[S aggregate[S]](t *testing.T, id string, cases []decideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := given[S](t, id, tc.given...)
			got, err := state.Decide(tc.when, now)
			thenDecided(t, got, err, tc.then, tc.err)
		})
	}
}

// thenDecided asserts the outcome of one Decide call.
func thenDecided(t *testing.T, got []domain.Payload, err error, want []domain.Payload, wantKind domain.Kind) {
	t.Helper()
	if wantKind != domain.Other {
		if err == nil {
			t.Fatalf("Decide = %#v, nil; want a %q error", got, wantKind)
		}
		if k := domain.KindOf(err); k != wantKind {
			t.Fatalf("Decide error kind = %q (%v); want %q", k, err, wantKind)
		}
		if got != nil {
			t.Fatalf("Decide returned payloads %#v alongside error %v", got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Decide error = %v (kind %q); want none", err, domain.KindOf(err))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decide payloads =\n\t%#v\nwant\n\t%#v", got, want)
	}
}

// checkErr asserts that err is nil when want is Other, and otherwise an error
// of kind want.
func checkErr(t *testing.T, what string, err error, want domain.Kind) {
	t.Helper()
	switch {
	case want == domain.Other && err != nil:
		t.Fatalf("%s: error = %v; want none", what, err)
	case want != domain.Other && err == nil:
		t.Fatalf("%s: no error; want a %q error", what, want)
	case domain.KindOf(err) != want:
		t.Fatalf("%s: error kind = %q (%v); want %q", what, domain.KindOf(err), err, want)
	}
}

func TestHistoryFoldsInOrder(t *testing.T) {
	// Fold must apply events oldest first: a rename after a create wins.
	c := given[domain.Collection](t, "acme_a",
		domain.CollectionCreated{Account: "acme", Slug: "a", Name: "First"},
		domain.CollectionRenamed{Account: "acme", Slug: "a", Name: "Second"},
		domain.CollectionRenamed{Account: "acme", Slug: "a", Name: "Third"},
	)
	if c.Name != "Third" {
		t.Fatalf("Name = %q; want %q", c.Name, "Third")
	}
	if zero := domain.Fold[domain.Video](nil); !reflect.DeepEqual(zero, domain.Video{}) {
		t.Fatalf("Fold(nil) = %#v; want the zero state", zero)
	}
}
