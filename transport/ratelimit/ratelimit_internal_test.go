package ratelimit

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"
)

// No 60 s span, wherever it starts, holds more allowed requests than the
// limit: requests at random times over five minutes, bursts at minute
// boundaries included, and the allowed ones checked pairwise.
func TestLimiterNeverExceedsLimitInAnyMinute(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		n     int
	}{
		{name: "free", limit: 60, n: 5000},
		{name: "pro", limit: 300, n: 8000},
		{name: "tiny", limit: 1, n: 500},
	}
	base := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.limit)))
			times := requestTimes(rng, base, tc.n)
			l := New()
			var allowed []time.Time
			for _, now := range times {
				if wantDecision(t, l.Allow("acct", tc.limit, now), now, tc.limit) {
					allowed = append(allowed, now)
				}
			}
			wantWithinLimit(t, allowed, tc.limit, "")
			if len(allowed) < tc.limit*3 {
				t.Fatalf("only %d allowed over five minutes", len(allowed))
			}
		})
	}
}

// requestTimes are n times over the five minutes from base, in order: at
// random, and a third of them within a second of a minute boundary.
func requestTimes(rng *rand.Rand, base time.Time, n int) []time.Time {
	times := make([]time.Time, n)
	for i := range times {
		if i%3 == 0 { // bursts just before and after each minute boundary
			m := time.Duration(rng.IntN(5)+1) * time.Minute
			times[i] = base.Add(m + time.Duration(rng.IntN(2000)-1000)*time.Millisecond)
		} else {
			times[i] = base.Add(time.Duration(rng.Int64N(int64(5 * time.Minute))))
		}
	}
	sortTimes(times)
	return times
}

// wantDecision checks a decision at now under limit (a refusal's retry
// within the window, the remaining budget below the limit) and returns
// whether it allowed the request.
func wantDecision(t *testing.T, d Decision, now time.Time, limit int) bool {
	t.Helper()
	if !d.Allowed && (d.Retry <= 0 || d.Retry > Window) {
		t.Fatalf("refused at %v with retry %v", now, d.Retry)
	}
	if d.Remaining < 0 || d.Remaining >= limit {
		t.Fatalf("remaining %d", d.Remaining)
	}
	return d.Allowed
}

// wantWithinLimit checks, pairwise, that no 60 s span of allowed (in
// order) holds more than limit requests; where says where they were made.
func wantWithinLimit(t *testing.T, allowed []time.Time, limit int, where string) {
	t.Helper()
	for i := range allowed {
		j := i
		for j < len(allowed) && allowed[j].Sub(allowed[i]) < Window {
			j++
		}
		if j-i > limit {
			t.Fatalf("%d requests allowed within 60 s from %v%s (limit %d)", j-i, allowed[i], where, limit)
		}
	}
}

func sortTimes(ts []time.Time) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Before(ts[j-1]); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// The budget comes back request by request, a minute after each was made;
// Reset and the retry wait say when.
func TestLimiterSlides(t *testing.T) {
	l := New()
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		d := l.Allow("a", 3, t0.Add(time.Duration(i)*10*time.Second))
		if !d.Allowed || d.Remaining != 2-i || !d.Reset.Equal(t0.Add(time.Minute)) {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	d := l.Allow("a", 3, t0.Add(30*time.Second))
	if d.Allowed || d.Retry != 30*time.Second || !d.Reset.Equal(t0.Add(time.Minute)) {
		t.Fatalf("over the limit: %+v", d)
	}
	if d := l.Allow("a", 3, t0.Add(time.Minute)); !d.Allowed || d.Remaining != 0 || !d.Reset.Equal(t0.Add(70*time.Second)) {
		t.Fatalf("after the first left the window: %+v", d)
	}
	if d := l.Allow("b", 3, t0.Add(30*time.Second)); !d.Allowed {
		t.Fatal("another key shares the budget")
	}
	// Keys idle for a window are forgotten.
	l.Allow("c", 3, t0.Add(10*time.Minute))
	l.mu.Lock()
	n := len(l.logs)
	l.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d logs kept after a sweep, want 1", n)
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
