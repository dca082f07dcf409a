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
//
// Each account's entry also keeps the last of those writes that settled
// (settle) and timed out: settled writes are the ones that may take access
// away (a revoked key), so a request whose command is decided on its own
// new stream alone (settledWrites) waits only for those, and looks at its
// key again, while the account's other writes are still being applied.
type ownWrites struct {
	mu   sync.Mutex
	last map[string]pending
	// all and allSettled are the largest of last's seqs and settled seqs,
	// kept when last forgets: while the read models include them, no
	// request waits, and none takes mu.
	all, allSettled atomic.Uint64
	// prune is the size of last at which note next drops the accounts
	// caught up: twice what stayed, so the walks cost O(1) per note.
	prune int
}

// pending is what one account waits for: its last write, and its last
// settled write.
type pending struct{ seq, settled uint64 }

// anyAccount asks awaitOwnWrites for every account's writes.
const anyAccount = ""

// awaiting is which of an account's pending writes a request waits for.
type awaiting bool

const (
	allWrites     awaiting = false // every one: the request reads the read models
	settledWrites awaiting = true  // settled ones: the request's command decides on a new stream of its own
)

// note records that account wrote up to seq, a settled write or not;
// applied is how far the read models are. Accounts that never come back to
// read are forgotten here once the map has grown: those caught up go.
func (o *ownWrites) note(account string, seq, applied uint64, settled bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last = make(map[string]pending)
	}
	if len(o.last) >= o.prune {
		maps.DeleteFunc(o.last, func(_ string, p pending) bool { return p.seq <= applied })
		o.prune = max(64, 2*len(o.last))
	}
	p := o.last[account]
	p.seq = max(p.seq, seq)
	if settled {
		p.settled = max(p.settled, seq)
		if seq > o.allSettled.Load() {
			o.allSettled.Store(seq) // under mu: no other writer
		}
	}
	o.last[account] = p
	if seq > o.all.Load() {
		o.all.Store(seq)
	}
}

// pending is the sequence account's requests must wait for (which of its
// writes), 0 when the read models include them (applied is how far they
// are); an account found caught up is forgotten here, and the others by
// note's pruning, so the map holds little more than accounts with writes
// in flight.
func (o *ownWrites) pending(account string, applied uint64, which awaiting) uint64 {
	all := &o.all
	if which == settledWrites {
		all = &o.allSettled
	}
	if top := all.Load(); top <= applied {
		return 0 // every write answered is applied: the usual case, lock-free
	} else if account == anyAccount {
		return top
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.last[account]
	if ok && p.seq <= applied {
		delete(o.last, account)
		return 0
	}
	if which == allWrites {
		return p.seq
	}
	if p.settled <= applied {
		return 0
	}
	return p.settled
}

// wrote is how a handler whose answer does not read the read models ends
// a write: it records the write for the caller's account and returns at
// once. The account's next request waits for it in authenticate.
func (s *Server) wrote(r *http.Request, seq uint64) { s.wroteFor(callerOf(r).Account, seq) }

// wroteFor is wrote for work that is not a request's (a tus upload
// accepted by itself).
func (s *Server) wroteFor(account string, seq uint64) { s.noteWrite(account, seq, false) }

// settledFor records a settled write of account that the read models do
// not include yet (its settle timed out): every next request of the
// account waits for it, and looks at its key again.
func (s *Server) settledFor(account string, seq uint64) { s.noteWrite(account, seq, true) }

func (s *Server) noteWrite(account string, seq uint64, settled bool) {
	if applied := s.cfg.Projector.Applied(); seq > applied {
		s.own.note(account, seq, applied, settled)
	}
}

// awaitOwnWrites waits, at most Config.SettleTimeout, until the read
// models include every write this server answered for account (only its
// settled ones for settledWrites), so that the request reads what
// the account wrote before it, and reports whether there was anything to
// wait for. Usually there is not: one atomic load. A timeout is logged, as
// a settle's is; a projector that stopped on an error is reported by
// /healthz, not here on every request.
func (s *Server) awaitOwnWrites(ctx context.Context, account string, which awaiting) bool {
	seq := s.own.pending(account, s.cfg.Projector.Applied(), which)
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
