package eventstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
)

// aggregateLocks let one process's commands on an aggregate run one at a
// time. Run together, they load the same last sequence, all but one fail
// the append's expectation and start over, and under a few concurrent
// writers some run out of attempts. Writers in other processes are still
// caught by the expected sequence (and Execute's retries, spread by
// retryPause).
type aggregateLocks struct {
	mu   sync.Mutex
	held map[domain.StreamID]*aggregateLock
}

// aggregateLock is one aggregate's turn: a token in ch while a command
// runs; refs counts the commands holding or awaiting it.
type aggregateLock struct {
	ch   chan struct{}
	refs int
}

// lock waits for key's turn, or for ctx to end; unlock hands it on.
func (l *aggregateLocks) lock(ctx context.Context, key domain.StreamID) (unlock func(), err error) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[domain.StreamID]*aggregateLock{}
	}
	e := l.held[key]
	if e == nil {
		e = &aggregateLock{ch: make(chan struct{}, 1)}
		l.held[key] = e
	}
	e.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// retryPause is how long Execute waits before its attempt after the
// attempt-th conflict (from 0): a random time up to 1 ms doubled per
// attempt, at most 16 ms (8 ms within the default 5 attempts), so that writers in several processes that met
// once do not meet again at once.
func retryPause(attempt int) time.Duration {
	return rand.N(time.Millisecond<<min(attempt, 4)) + 1
}
