package eventstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A turn is waited for until its holder hands it on or the waiter's
// context ends; other aggregates do not wait; nothing is kept once no
// command holds or awaits a turn.
func TestAggregateLocks(t *testing.T) {
	var l aggregateLocks
	ctx := context.Background()
	unlockA, err := l.lock(ctx, "collection acme/talks")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.lock(ctx, "collection acme/other")
	if err != nil {
		t.Fatal("another aggregate waited:", err)
	}
	unlockB()
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.lock(short, "collection acme/talks"); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock while held: %v, want the context's end", err)
	}
	got := make(chan func())
	go func() {
		unlock, err := l.lock(ctx, "collection acme/talks")
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
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
