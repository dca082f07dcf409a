package httpapi

import (
	"sync"
	"time"
)

// limiter counts requests per account in fixed one-minute windows aligned
// to the minute. It lives in the process: each API node counts its own
// requests (documented in docs/operations.md).
type limiter struct {
	mu      sync.Mutex
	windows map[string]*window
}

type window struct {
	start time.Time
	count int
}

func newLimiter() *limiter { return &limiter{windows: make(map[string]*window)} }

// allow counts one request of account against limit at now. It returns the
// requests left in the window, when the window resets, and whether the
// request may proceed.
func (l *limiter) allow(account string, limit int, now time.Time) (remaining int, reset time.Time, ok bool) {
	start := now.Truncate(time.Minute)
	reset = start.Add(time.Minute)
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[account]
	if w == nil || !w.start.Equal(start) {
		if len(l.windows) > 10000 {
			l.prune(start)
		}
		w = &window{start: start}
		l.windows[account] = w
	}
	if w.count >= limit {
		return 0, reset, false
	}
	w.count++
	return limit - w.count, reset, true
}

// prune drops windows that have ended.
func (l *limiter) prune(current time.Time) {
	for k, w := range l.windows {
		if w.start.Before(current) {
			delete(l.windows, k)
		}
	}
}
