package httpapi

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
)

// ownWrites remembers, per account, the last stream sequence of a write
// this server answered before the read models included it. The account's
// next requests wait for that sequence (awaitOwnWrites) before they read
// anything, so a GET after a POST sees the write while the POST's answer
// did not wait for the projector. Other accounts never wait for it; an
// operator, who reads every account, waits for all of them (anyAccount).
type ownWrites struct {
	mu   sync.Mutex
	last map[string]uint64
	// all is the largest of last, kept when last forgets: while the read
	// models include it, no request waits, and none takes mu.
	all atomic.Uint64
	// prune is the size of last at which note next drops the accounts
	// caught up: twice what stayed, so the walks cost O(1) per note.
	prune int
}

// anyAccount asks awaitOwnWrites for every account's writes.
const anyAccount = ""

// note records that account wrote up to seq; applied is how far the read
// models are. Accounts that never come back to read are forgotten here
// once the map has grown: those caught up go.
func (o *ownWrites) note(account string, seq, applied uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last = make(map[string]uint64)
	}
	if len(o.last) >= o.prune {
		maps.DeleteFunc(o.last, func(_ string, s uint64) bool { return s <= applied })
		o.prune = max(64, 2*len(o.last))
	}
	o.last[account] = max(o.last[account], seq)
	if seq > o.all.Load() {
		o.all.Store(seq) // under mu: no other writer
	}
}

// pending is the sequence account's requests must wait for, 0 when the
// read models include all of its writes (applied is how far they are);
// an account found caught up is forgotten here, and the others by note's
// pruning, so the map holds little more than accounts with writes in
// flight.
func (o *ownWrites) pending(account string, applied uint64) uint64 {
	all := o.all.Load()
	if all <= applied {
		return 0 // every write answered is applied: the usual case, lock-free
	}
	if account == anyAccount {
		return all
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	seq, ok := o.last[account]
	if ok && seq <= applied {
		delete(o.last, account)
		return 0
	}
	return seq
}

// wrote is how a handler whose answer does not read the read models ends
// a write: it records the write for the caller's account and returns at
// once. The account's next request waits for it in authenticate.
func (s *Server) wrote(r *http.Request, seq uint64) { s.wroteFor(callerOf(r).Account, seq) }

// wroteFor is wrote for work that is not a request's (a tus upload
// accepted by itself).
func (s *Server) wroteFor(account string, seq uint64) {
	if applied := s.cfg.Projector.Applied(); seq > applied {
		s.own.note(account, seq, applied)
	}
}

// awaitOwnWrites waits, at most Config.SettleTimeout, until the read
// models include every write this server answered for account, so that
// the request reads what the account wrote before it, and reports whether
// there was anything to wait for. Usually there is not: one map lookup. A
// timeout is logged, as a settle's is; a projector that stopped on an
// error is reported by /healthz, not here on every request.
func (s *Server) awaitOwnWrites(ctx context.Context, account string) bool {
	seq := s.own.pending(account, s.cfg.Projector.Applied())
	if seq == 0 {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.SettleTimeout)
	defer cancel()
	err := s.cfg.Projector.WaitFor(wctx, seq)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		loggerFrom(ctx, s.cfg.Log).Warn("read models behind the account's writes", "account", account, "seq", seq, "err", err)
	}
	return true
}
