package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/ratelimit"
)

// uploadSlots bounds the uploads in flight: all of them (each holds a
// 1 MiB buffer and a file descriptor), and those of each account, so one
// account holding slow uploads open cannot take every slot.
//
// The server-wide bound is this process's (it is about its memory). With
// a ledger, an account's bound holds across the API nodes: each node
// records in the ledger how many of the account's uploads it runs, under a
// lease (uploadLease) it renews every uploadBeat while any runs, so the
// slots of a node that died free themselves within uploadLease+RateSkew.
// Without NATS a node counts its own uploads alone (fails open).
type uploadSlots struct {
	mu         sync.Mutex
	global     int
	inFlight   int
	perAccount map[string]int

	ledger  ratelimit.Ledger // nil: the account's bound is per process
	node    string
	now     func() time.Time
	log     *slog.Logger
	shared  sync.Mutex // one ledger update at a time, so counts stay in order
	beating bool       // the lease renewer runs
}

// uploadRetry is the Retry-After of an upload refused for want of a slot.
const uploadRetry = 5

// Leases of the uploads recorded in the ledger; each update of the ledger
// waits at most uploadLedgerTimeout.
const (
	uploadLease         = 30 * time.Second
	uploadBeat          = 10 * time.Second
	uploadLedgerTimeout = time.Second
)

// acquire takes a slot for account, whose plan allows accountCap uploads
// at once. The account's cap is checked first: an account at its cap gets
// 429 (its own doing); a full server gets 503.
func (u *uploadSlots) acquire(w http.ResponseWriter, account string, accountCap int) (release func(), err error) {
	overCap := func() error {
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return domain.E("upload video", domain.RateLimited,
			"Too many uploads in progress: your plan allows %d at once; retry after %d seconds, when one has finished", accountCap, uploadRetry)
	}
	if u.ledger != nil && accountCap > 0 {
		u.shared.Lock()
		defer u.shared.Unlock()
	}
	u.mu.Lock()
	if accountCap > 0 && u.perAccount[account] >= accountCap {
		u.mu.Unlock()
		return nil, overCap()
	}
	if u.inFlight >= u.global {
		u.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return nil, domain.E("upload video", domain.Unavailable,
			"The server has too many uploads in progress; retry after %d seconds", uploadRetry)
	}
	mine := u.perAccount[account]
	u.mu.Unlock()
	if u.ledger != nil && accountCap > 0 {
		full := false
		err := u.record(account, func(others int) int {
			if others+mine+1 > accountCap {
				full = true
				return mine
			}
			return mine + 1
		})
		if full {
			return nil, overCap()
		}
		if err != nil {
			u.log.Warn("upload slots counted by this process alone while the shared ledger does not answer", "err", err)
		}
	}
	u.mu.Lock()
	u.inFlight++
	u.perAccount[account]++
	if u.ledger != nil && accountCap > 0 && !u.beating {
		u.beating = true
		go u.beat()
	}
	u.mu.Unlock()
	return func() {
		shared := u.ledger != nil && accountCap > 0
		if shared {
			u.shared.Lock()
			defer u.shared.Unlock()
		}
		u.mu.Lock()
		u.inFlight--
		if u.perAccount[account]--; u.perAccount[account] <= 0 {
			delete(u.perAccount, account)
		}
		left := u.perAccount[account]
		u.mu.Unlock()
		if shared {
			_ = u.record(account, func(int) int { return left }) // on failure the lease lapses
		}
	}, nil
}

// record stores this node's count of account's uploads in the ledger:
// count is given the other nodes' uploads and returns this node's.
func (u *uploadSlots) record(account string, count func(others int) int) error {
	ctx, cancel := context.WithTimeout(context.Background(), uploadLedgerTimeout)
	defer cancel()
	now := u.now()
	return u.ledger.UpdateRate(ctx, "up:"+account, u.node, now, func(others []kv.RateHolding) kv.RateHolding {
		n := 0
		for _, h := range others {
			n += h.Share
		}
		c := count(n)
		return kv.RateHolding{Share: c, Used: c, Until: now.Add(uploadLease).UnixNano()}
	})
}

// beat renews the leases of the accounts with uploads in flight, every
// uploadBeat, until none is left.
func (u *uploadSlots) beat() {
	t := time.NewTicker(uploadBeat)
	defer t.Stop()
	for range t.C {
		u.mu.Lock()
		counts := maps.Clone(u.perAccount)
		if len(counts) == 0 {
			u.beating = false
			u.mu.Unlock()
			return
		}
		u.mu.Unlock()
		u.shared.Lock()
		for account := range counts {
			u.mu.Lock()
			n := u.perAccount[account]
			u.mu.Unlock()
			_ = u.record(account, func(int) int { return n })
		}
		u.shared.Unlock()
	}
}

// count is the number of uploads in flight, of account or (account "") of
// everyone.
func (u *uploadSlots) count(account string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if account == "" {
		return u.inFlight
	}
	return u.perAccount[account]
}

// Bodies that trickle in end too: below uploadMinRate bytes a second
// over a whole uploadRateWindow, an upload ends with 408 (a tus PATCH
// keeps what arrived), so a drip of a byte every few seconds cannot hold
// an account's upload slots forever.
const (
	uploadMinRate    = 1 << 10 // bytes a second
	uploadRateWindow = time.Minute
)

// idleBody reads a request body and ends it when no byte arrives for
// idle: before each read it moves the connection's read deadline. Time
// spent by the handler itself (writing to disk) never counts, only the
// wait for the client.
type idleBody struct {
	r        io.Reader
	rc       *http.ResponseController
	idle     time.Duration
	timedOut bool // no byte for idle, or too slow (slow)
	slow     bool

	now         func() time.Time
	windowStart time.Time // the current uploadRateWindow began
	windowBytes int64     // bytes read in it

	mu    sync.Mutex // orders the deadline of Read, interrupt and done
	taken bool       // interrupted: another request took over (tus)
	ended bool       // done: the body is no longer read
}

func newIdleBody(w http.ResponseWriter, r *http.Request, idle time.Duration, now func() time.Time) *idleBody {
	return &idleBody{r: r.Body, rc: http.NewResponseController(w), idle: idle, now: now, windowStart: now()}
}

// errTooSlow ends a body that arrives below uploadMinRate.
var errTooSlow = errors.New("upload body too slow")

// pace counts n bytes just read, and reports a body below uploadMinRate
// over the whole window that just ended.
func (b *idleBody) pace(n int) error {
	b.windowBytes += int64(n)
	if now := b.now(); now.Sub(b.windowStart) >= uploadRateWindow {
		if b.windowBytes < int64(uploadMinRate*uploadRateWindow/time.Second) {
			b.timedOut, b.slow = true, true
			return errTooSlow
		}
		b.windowStart, b.windowBytes = now, 0
	}
	return nil
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.taken {
		b.mu.Unlock()
		return 0, errTakenOver
	}
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle)) // unsupported (HTTP/2 over some transports): no idle limit
	b.mu.Unlock()
	n, err := b.r.Read(p)
	if err != nil {
		b.mu.Lock()
		taken := b.taken
		b.mu.Unlock()
		if taken {
			return n, errTakenOver
		}
	}
	if err == nil {
		err = b.pace(n)
	}
	var ne net.Error
	if err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		b.timedOut = true
	}
	return n, err
}

// done clears the read deadline, so a kept-alive connection is not cut
// while it waits for its next request. Later interrupts do nothing.
func (b *idleBody) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.ended = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
}

// errTakenOver ends the body read of a tus request another one took over.
var errTakenOver = errors.New("another request took over the upload")

// interrupt ends the body read in progress (from another goroutine): a
// tus takeover. Its deadline in the past wakes the read at once. Under
// HTTP/2, where deadlines are not supported, it takes effect at the next
// read.
func (b *idleBody) interrupt() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.taken = true
	_ = b.rc.SetReadDeadline(time.Unix(1, 0))
}

// bodyError turns an error met while reading an upload into what the
// client is told: 408 when the body stopped arriving, 507 when the disk is
// full, 400 otherwise. The message never carries the error's text, which
// may name server files or addresses.
func (b *idleBody) bodyError(w http.ResponseWriter, err error) error {
	switch {
	case errors.Is(err, errTakenOver):
		w.Header().Set("Connection", "close")
		return domain.Wrap("upload video", domain.Conflict, err,
			"another request for this upload took over from this one; the bytes received before are kept")
	case b.slow:
		w.Header().Set("Connection", "close")
		return domain.Wrap("upload video", domain.Timeout, err,
			fmt.Sprintf("the upload arrived slower than %d bytes a second over %s and was ended (a resumable upload keeps what arrived)", uploadMinRate, uploadRateWindow))
	case b.timedOut:
		w.Header().Set("Connection", "close")
		return domain.Wrap("upload video", domain.Timeout, err,
			"no data arrived for "+b.idle.String()+"; the upload was ended and nothing was stored")
	case noSpace(err):
		return storeFailure(w, err)
	}
	w.Header().Set("Connection", "close")
	return domain.Wrap("upload video", domain.Invalid, err,
		"upload interrupted: the request body ended early or was not valid multipart; nothing was stored")
}

// noSpace reports whether err is a file system out of room (or quota, or
// a file larger than it takes).
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) || errors.Is(err, diskspace.ErrNoRoom)
}

// storeFailure is what the client is told when the server could not store
// an upload on its own disk: 507 when the disk is full (or inside its
// reserve), a 500 otherwise (logged in full). The message names no path.
func storeFailure(w http.ResponseWriter, err error) error {
	if noSpace(err) {
		w.Header().Set("Connection", "close") // the rest of the body is not read
		return errInsufficientStorage(err)
	}
	if eventstore.IsUnavailable(err) { // the media bucket's NATS did not answer
		return domain.Wrap("upload video", domain.Unavailable, err, "the media store is not answering; retry in a few seconds")
	}
	return domain.Wrap("upload video", domain.Internal, err, "")
}

// checkRoom refuses (507) an upload when the disk is inside its reserve,
// or when its announced length (n > 0) does not fit above it beside what
// the uploads in flight have claimed.
func (s *Server) checkRoom(n int64) error {
	return s.roomError(n, s.disk.Fits(n))
}

// claimRoom is checkRoom for a request that writes its n bytes now: the
// claim (nil for none: n unknown) holds them against every other
// request's room until its Writer has written them or it is released.
func (s *Server) claimRoom(n int64) (*diskspace.Claim, error) {
	c, err := s.disk.Claim(n)
	return c, s.roomError(n, err)
}

// roomError is the answer to a refusal of Fits or Claim for n bytes; a
// room that could not be measured is logged and lets the upload through.
func (s *Server) roomError(n int64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, diskspace.ErrNoRoom):
		return errInsufficientStorage(diskspace.ErrNoRoom)
	case errors.Is(err, diskspace.ErrTooBig):
		return domain.E("upload video", domain.InsufficientStorage,
			"the server is short of disk space: an upload of %d bytes does not fit now; try again later", n)
	}
	s.cfg.Log.Warn("free disk space unknown; upload not checked against the reserve", "err", err)
	return nil
}
