package eventstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// A turn is waited for until its holder hands it on or the waiter's
// context ends; other aggregates do not wait; nothing is kept once no
// command holds or awaits a turn.
func TestAggregateLocks(t *testing.T) {
	var l aggregateLocks
	ctx := context.Background()
	talks, other := domain.CollectionStream("acme", "talks"), domain.CollectionStream("acme", "other")
	unlockA, err := l.lock(ctx, talks)
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.lock(ctx, other)
	if err != nil {
		t.Fatal("another aggregate waited:", err)
	}
	unlockB()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.lock(cancelled, talks); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock while held: %v, want the context's end", err)
	}
	got := make(chan func())
	go func() {
		unlock, err := l.lock(ctx, talks)
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
	// The second command is waiting once it counts among the turn's.
	refs := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		if e := l.held[talks]; e != nil {
			return e.refs
		}
		return 0
	}
	for deadline := time.Now().Add(10 * time.Second); refs() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the second command never asked for the turn")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-got:
		t.Fatal("a second command took the turn while the first held it")
	default:
	}
	unlockA()
	(<-got)()
	if n := len(l.held); n != 0 {
		t.Fatalf("%d turns kept after every command ended", n)
	}
}

func TestRetryPause(t *testing.T) {
	for attempt := range 8 {
		for range 100 {
			if d := retryPause(attempt); d <= 0 || d > 16*time.Millisecond {
				t.Fatalf("retryPause(%d) = %v, want (0, 16ms]", attempt, d)
			}
		}
	}
}
