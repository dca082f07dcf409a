package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kino-video/kino/eventstore/kv"
)

// Window is the length of the sliding window of every request limit.
const Window = time.Minute

// Timings of the shared ledger (Ledger). A node holds its share of a
// key for rateLease after each update and allows a request only while the
// share is held for a whole window after it. Once less than
// Window+rateRenew is left (10 s after an update) the next request
// that fits renews the lease in the background; one that does not fit
// (or finds the lease too short) waits for an update. A refusal for want
// of share asks the ledger again at most every rateDryRetry; a ledger that
// cannot be reached is not asked again for rateDown, and each update waits
// at most rateTimeout.
const (
	rateLease    = Window + 30*time.Second
	rateRenew    = 20 * time.Second
	rateDryRetry = time.Second
	rateDown     = 5 * time.Second
	rateTimeout  = time.Second
)

// Ledger shares rate limits between API nodes (kv.RateLimits
// on NATS): for each key it holds the part of the key's budget each node
// has taken. UpdateRate calls decide with the other nodes' live holdings
// and stores what it returns as node's, atomically.
type Ledger interface {
	UpdateRate(ctx context.Context, key, node string, now time.Time, decide func(others []kv.RateHolding) kv.RateHolding) error
	// Connected is false while this process has no connection to NATS.
	Connected() bool
}

// Limiter allows at most limit requests per key in any Window: a
// sliding log, optionally shared between API nodes through a Ledger (the
// package doc tells how).
type Limiter struct {
	mu      sync.Mutex
	logs    map[string]*requestLog
	sweepAt time.Time

	ledger    Ledger // nil: each process counts alone
	prefix    string // of the ledger's keys: "acct:", "addr:"
	node      string // this process in the ledger
	log       *slog.Logger
	downUntil int64 // the ledger failed: count alone until then (Unix ns)
	keepShare bool  // ...but keep to the shares held: NATS was connected
	failing   bool  // the last update failed (logged once per outage)
}

// requestLog is the ring of one key's allowed requests, oldest first, as
// Unix nanoseconds. It grows up to the key's limit. With a ledger it also
// holds the node's share of the key and what the other nodes had counted
// at the last update.
type requestLog struct {
	times []int64
	head  int // index of the oldest
	n     int

	share        int   // requests this node may have in the window
	until        int64 // the share is held until then (Unix ns)
	othersUsed   int   // the other nodes' requests at the last update
	othersOldest int64 // the oldest of them (Unix ns), 0: none
	dryAt        int64 // the last update found no budget left, at (Unix ns)
	renewing     bool  // a renewal runs in the background
	gen          uint64
	syncMu       sync.Mutex // one update at a time
}

func New() *Limiter { return &Limiter{logs: make(map[string]*requestLog)} }

// NewShared is a limiter whose keys (prefixed) are shared through
// ledger; a nil ledger makes a process-local limiter.
func NewShared(ledger Ledger, prefix, node string, log *slog.Logger) *Limiter {
	l := New()
	l.ledger, l.prefix, l.node, l.log = ledger, prefix, node, log
	return l
}

// rateBlock is the part of a limit a node takes from the ledger at once.
func rateBlock(limit int) int { return max(1, limit/20) }

// decision is the outcome of one request against a limit.
type Decision struct {
	Allowed   bool
	Remaining int           // requests left in the window after this one
	Reset     time.Time     // when the oldest counted request leaves the window
	Retry     time.Duration // when refused: the wait until one request is allowed
}

// Allow counts one request of key against limit at now, unless it is over
// the limit.
func (l *Limiter) Allow(key string, limit int, now time.Time) Decision {
	return l.take(key, limit, now, true)
}

// Over reports, without counting anything, whether key has used its limit.
// A key this node has not counted is not over, without asking the ledger.
func (l *Limiter) Over(key string, limit int, now time.Time) (bool, time.Duration) {
	d := l.take(key, limit, now, false)
	return !d.Allowed, d.Retry
}

// Peek is the decision a request of key would get now, without counting
// it (the account page's remaining budget).
func (l *Limiter) Peek(key string, limit int, now time.Time) Decision {
	return l.take(key, limit, now, false)
}

func (l *Limiter) take(key string, limit int, now time.Time, count bool) Decision {
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweepAt) {
		l.sweep(t)
		l.sweepAt = now.Add(Window)
	}
	lg := l.logs[key]
	if lg == nil {
		if !count {
			return Decision{Allowed: true, Remaining: limit}
		}
		lg = &requestLog{}
		l.logs[key] = lg
	}
	lg.expire(t - int64(Window))
	for synced := false; ; synced = true {
		if lg.n >= limit || l.ledger == nil {
			return lg.local(limit, t, count)
		}
		if t < l.downUntil {
			// The ledger does not answer. With NATS connected (its
			// stream electing a leader), a share whose lease still runs
			// is kept to: the other nodes keep to theirs, so the cluster
			// stays within the limit. Otherwise the node counts alone.
			if l.keepShare && t <= lg.until {
				if lg.n < lg.share {
					return lg.grant(limit, t, count)
				}
				return lg.refuse(t)
			}
			return lg.local(limit, t, count)
		}
		held := t+int64(Window) <= lg.until
		if held && lg.n < lg.share && t+int64(Window+rateRenew) <= lg.until {
			return lg.grant(limit, t, count)
		}
		dry := lg.dryAt != 0 && t < lg.dryAt+int64(rateDryRetry)
		if held && lg.n < lg.share {
			// Renewal due, but the request fits: renew in the
			// background, so the request does not wait for NATS.
			if !dry && !synced && !lg.renewing {
				lg.renewing = true
				go l.renew(lg, key, limit, now, lg.gen)
			}
			return lg.grant(limit, t, count)
		}
		if (dry && held) || (synced && lg.dryAt == t) {
			return lg.refuse(t)
		}
		gen := lg.gen
		l.mu.Unlock()
		err := l.update(lg, key, limit, now, gen)
		l.mu.Lock()
		l.updated(err, t)
		lg.expire(t - int64(Window))
	}
}

// renew updates key's share in the background.
func (l *Limiter) renew(lg *requestLog, key string, limit int, now time.Time, gen uint64) {
	err := l.update(lg, key, limit, now, gen)
	l.mu.Lock()
	defer l.mu.Unlock()
	lg.renewing = false
	l.updated(err, now.UnixNano())
}

// updated notes the outcome of an update at t: after a failure the node
// counts alone for rateDown. Each outage is logged once. l.mu is held.
func (l *Limiter) updated(err error, t int64) {
	switch {
	case err != nil:
		if !l.failing {
			l.failing = true
			l.log.Warn("rate limits counted by this process alone until the shared ledger answers", "err", err)
		}
		l.downUntil = t + int64(rateDown)
		l.keepShare = l.ledger.Connected()
	case l.failing:
		l.failing = false
		l.log.Info("rate limits shared again")
	}
}

// update asks the ledger for this node's share of key: enough for one
// more request and up to a block beyond, as far as the other nodes leave
// room. Callers that waited while another request updated the same key
// (gen moved on) use its answer instead.
func (l *Limiter) update(lg *requestLog, key string, limit int, now time.Time, gen uint64) error {
	lg.syncMu.Lock()
	defer lg.syncMu.Unlock()
	l.mu.Lock()
	moved := lg.gen != gen
	l.mu.Unlock()
	if moved {
		return nil
	}
	t := now.UnixNano()
	var mine kv.RateHolding
	var othersUsed int
	var othersOldest int64
	decide := func(others []kv.RateHolding) kv.RateHolding {
		l.mu.Lock()
		defer l.mu.Unlock()
		lg.expire(t - int64(Window))
		taken := 0
		othersUsed, othersOldest = 0, 0
		for _, h := range others {
			taken += h.Share
			othersUsed += h.Used
			if h.Used > 0 && h.Oldest+int64(Window) > t && (othersOldest == 0 || h.Oldest < othersOldest) {
				othersOldest = h.Oldest
			}
		}
		share := max(lg.n, min(lg.n+rateBlock(limit), limit-taken))
		// Never allow more than the smaller of the old and the new share
		// until the new one is stored.
		lg.share = min(lg.share, share)
		mine = kv.RateHolding{Share: share, Used: lg.n, Until: t + int64(rateLease)}
		if lg.n > 0 {
			mine.Oldest = lg.times[lg.head]
		}
		return mine
	}
	ctx, cancel := context.WithTimeout(context.Background(), rateTimeout)
	defer cancel()
	err := l.ledger.UpdateRate(ctx, l.prefix+key, l.node, now, decide)
	l.mu.Lock()
	defer l.mu.Unlock()
	lg.gen++
	if err != nil {
		return err
	}
	lg.share, lg.until = mine.Share, mine.Until
	lg.othersUsed, lg.othersOldest = othersUsed, othersOldest
	lg.dryAt = 0
	if mine.Share <= lg.n {
		lg.dryAt = t
	}
	return nil
}

// local decides on the node's own log alone: the whole limit is its.
func (lg *requestLog) local(limit int, t int64, count bool) Decision {
	if lg.n >= limit {
		oldest := lg.times[lg.head]
		return Decision{Reset: resetAt(oldest), Retry: time.Duration(oldest + int64(Window) - t)}
	}
	if !count {
		return Decision{Allowed: true, Remaining: limit - lg.n}
	}
	if lg.n > 0 { // keep the log in order even if the clock steps back
		t = max(t, lg.newest())
	}
	lg.push(t, limit)
	return Decision{Allowed: true, Remaining: limit - lg.n, Reset: resetAt(lg.times[lg.head])}
}

// grant allows (and, if count, counts) a request within the node's share.
// Remaining and Reset are the cluster's as of the last update.
func (lg *requestLog) grant(limit int, t int64, count bool) Decision {
	if count {
		if lg.n > 0 {
			t = max(t, lg.newest())
		}
		lg.push(t, limit)
	}
	d := Decision{Allowed: true, Remaining: max(0, limit-lg.n-lg.othersUsed)}
	if lg.n > 0 {
		oldest := lg.times[lg.head]
		if lg.othersOldest != 0 && lg.othersOldest < oldest && lg.othersOldest+int64(Window) > t {
			oldest = lg.othersOldest
		}
		d.Reset = resetAt(oldest)
	}
	return d
}

// refuse answers a request for which the cluster has no budget left: it is
// allowed again once the oldest request counted anywhere (as of the last
// update) leaves the window, or in a second if none is known.
func (lg *requestLog) refuse(t int64) Decision {
	next := int64(0)
	for _, o := range []int64{lg.oldest(), lg.othersOldest} {
		if o != 0 && o+int64(Window) > t && (next == 0 || o < next) {
			next = o
		}
	}
	if next == 0 {
		return Decision{Reset: time.Unix(0, t).Add(time.Second), Retry: time.Second}
	}
	return Decision{Reset: resetAt(next), Retry: time.Duration(next + int64(Window) - t)}
}

func (lg *requestLog) oldest() int64 {
	if lg.n == 0 {
		return 0
	}
	return lg.times[lg.head]
}

func resetAt(oldest int64) time.Time { return time.Unix(0, oldest).Add(Window) }

// sweep drops the logs of keys with no request in the last window, so
// keys seen once (client addresses, say) do not stay forever. A dropped
// log's share stays in the ledger until its lease lapses or a new log of
// the key updates it.
func (l *Limiter) sweep(now int64) {
	for k, lg := range l.logs {
		if lg.n == 0 || lg.newest() <= now-int64(Window) {
			delete(l.logs, k)
		}
	}
}

func (lg *requestLog) newest() int64 { return lg.times[(lg.head+lg.n-1)%len(lg.times)] }

// expire forgets requests at or before cutoff.
func (lg *requestLog) expire(cutoff int64) {
	for lg.n > 0 && lg.times[lg.head] <= cutoff {
		lg.head = (lg.head + 1) % len(lg.times)
		lg.n--
	}
}

// push appends t, growing the ring (up to limit) when it is full.
func (lg *requestLog) push(t int64, limit int) {
	if lg.n == len(lg.times) {
		size := min(max(2*len(lg.times), 8), max(limit, lg.n+1))
		grown := make([]int64, size)
		for i := 0; i < lg.n; i++ {
			grown[i] = lg.times[(lg.head+i)%len(lg.times)]
		}
		lg.times, lg.head = grown, 0
	}
	lg.times[(lg.head+lg.n)%len(lg.times)] = t
	lg.n++
}
