package webhooks

import (
	"testing"
	"time"
)

// The /test allowance: testBurst at once, then one per testEvery, per
// subscription.
func TestTestLimiter(t *testing.T) {
	var l testLimiter
	now := time.Date(2026, 11, 22, 12, 0, 59, 0, time.UTC) // a minute boundary changes nothing
	for i := 0; i < testBurst; i++ {
		if _, ok := l.allow("hook1", now); !ok {
			t.Fatalf("call %d refused", i+1)
		}
	}
	wait, ok := l.allow("hook1", now)
	if ok || wait != testEvery {
		t.Fatalf("call %d: ok %v, wait %v; want refused for %v", testBurst+1, ok, wait, testEvery)
	}
	if _, ok := l.allow("hook2", now); !ok {
		t.Fatal("another subscription was refused")
	}
	now = now.Add(2 * time.Second) // across the minute: still refused
	if wait, ok := l.allow("hook1", now); ok || wait != testEvery-2*time.Second {
		t.Fatalf("after 2 s: ok %v, wait %v", ok, wait)
	}
	now = now.Add(testEvery - 2*time.Second)
	if _, ok := l.allow("hook1", now); !ok {
		t.Fatal("refused after a token came back")
	}
	if _, ok := l.allow("hook1", now); ok {
		t.Fatal("two calls on one token")
	}
	now = now.Add(time.Hour) // idle: a full bucket again, not more
	for i := 0; i < testBurst; i++ {
		if _, ok := l.allow("hook1", now); !ok {
			t.Fatalf("after idling, call %d refused", i+1)
		}
	}
	if _, ok := l.allow("hook1", now); ok {
		t.Fatal("idling saved up more than the burst")
	}
}
