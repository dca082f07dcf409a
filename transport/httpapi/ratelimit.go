package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/eventstore/kv"
)

// rateWindow is the length of the sliding window of every request limit.
const rateWindow = time.Minute

// Timings of the shared ledger (RateLedger). A node holds its share of a
// key for rateLease after each update and allows a request only while the
// share is held for a whole window after it. Once less than
// rateWindow+rateRenew is left (10 s after an update) the next request
// that fits renews the lease in the background; one that does not fit
// (or finds the lease too short) waits for an update. A refusal for want
// of share asks the ledger again at most every rateDryRetry; a ledger that
// cannot be reached is not asked again for rateDown, and each update waits
// at most rateTimeout.
const (
	rateLease    = rateWindow + 30*time.Second
	rateRenew    = 20 * time.Second
	rateDryRetry = time.Second
	rateDown     = 5 * time.Second
	rateTimeout  = time.Second
)

// RateLedger shares rate limits between API nodes (kv.RateLimits
// on NATS): for each key it holds the part of the key's budget each node
// has taken. UpdateRate calls decide with the other nodes' live holdings
// and stores what it returns as node's, atomically.
type RateLedger interface {
	UpdateRate(ctx context.Context, key, node string, now time.Time, decide func(others []kv.RateHolding) kv.RateHolding) error
	// Connected is false while this process has no connection to NATS.
	Connected() bool
}

var _ RateLedger = (*kv.RateLimits)(nil)

// limiter allows at most limit requests per key in any rateWindow: a
// sliding log. For each key it keeps the times of the requests it allowed
// in the last window (at most limit of them, in a ring), so no 60 s span
// ever holds more than limit allowed requests, wherever it starts. (A
// fixed window lets 2x the limit through across its boundary; a token
// bucket lets the bucket plus a minute's refill through.) Memory is 8
// bytes per request counted: 8 KB for an account on a 1000/min plan.
//
// With a ledger, the API nodes share each key's limit. Each node holds a
// share of the key's budget in the ledger and allows a request only while
// its own sliding log holds fewer than its share; the shares of all nodes
// never add up to more than the limit, so no 60 s span holds more than the
// limit across the cluster either. A node takes its share in blocks of a
// twentieth of the limit (rateBlock), when it has used what it holds; it
// gives back what it does not use (keeping at most a block beyond its
// log) whenever it updates; and it holds its share for a whole window
// after its last allowed request (the lease), so a share is never handed
// to another node while requests it allowed still count. Alone, a node
// takes the whole budget and behaves exactly as without a ledger. When
// NATS cannot be reached, the node counts alone (fails open) until it can;
// when NATS is reached but the ledger does not answer (its stream electing
// a leader after a node died), the node keeps to the shares it holds while
// their leases run, and counts alone only for keys it holds none of.
type limiter struct {
	mu      sync.Mutex
	logs    map[string]*requestLog
	sweepAt time.Time

	ledger    RateLedger // nil: each process counts alone
	prefix    string     // of the ledger's keys: "acct:", "addr:"
	node      string     // this process in the ledger
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

func newLimiter() *limiter { return &limiter{logs: make(map[string]*requestLog)} }

// newSharedLimiter is a limiter whose keys (prefixed) are shared through
// ledger; a nil ledger makes a process-local limiter.
func newSharedLimiter(ledger RateLedger, prefix, node string, log *slog.Logger) *limiter {
	l := newLimiter()
	l.ledger, l.prefix, l.node, l.log = ledger, prefix, node, log
	return l
}

// rateBlock is the part of a limit a node takes from the ledger at once.
func rateBlock(limit int) int { return max(1, limit/20) }

// decision is the outcome of one request against a limit.
type decision struct {
	allowed   bool
	remaining int           // requests left in the window after this one
	reset     time.Time     // when the oldest counted request leaves the window
	retry     time.Duration // when refused: the wait until one request is allowed
}

// allow counts one request of key against limit at now, unless it is over
// the limit.
func (l *limiter) allow(key string, limit int, now time.Time) decision {
	return l.take(key, limit, now, true)
}

// over reports, without counting anything, whether key has used its limit.
// A key this node has not counted is not over, without asking the ledger.
func (l *limiter) over(key string, limit int, now time.Time) (bool, time.Duration) {
	d := l.take(key, limit, now, false)
	return !d.allowed, d.retry
}

func (l *limiter) take(key string, limit int, now time.Time, count bool) decision {
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweepAt) {
		l.sweep(t)
		l.sweepAt = now.Add(rateWindow)
	}
	lg := l.logs[key]
	if lg == nil {
		if !count {
			return decision{allowed: true, remaining: limit}
		}
		lg = &requestLog{}
		l.logs[key] = lg
	}
	lg.expire(t - int64(rateWindow))
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
		held := t+int64(rateWindow) <= lg.until
		if held && lg.n < lg.share && t+int64(rateWindow+rateRenew) <= lg.until {
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
		lg.expire(t - int64(rateWindow))
	}
}

// renew updates key's share in the background.
func (l *limiter) renew(lg *requestLog, key string, limit int, now time.Time, gen uint64) {
	err := l.update(lg, key, limit, now, gen)
	l.mu.Lock()
	defer l.mu.Unlock()
	lg.renewing = false
	l.updated(err, now.UnixNano())
}

// updated notes the outcome of an update at t: after a failure the node
// counts alone for rateDown. Each outage is logged once. l.mu is held.
func (l *limiter) updated(err error, t int64) {
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
func (l *limiter) update(lg *requestLog, key string, limit int, now time.Time, gen uint64) error {
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
		lg.expire(t - int64(rateWindow))
		taken := 0
		othersUsed, othersOldest = 0, 0
		for _, h := range others {
			taken += h.Share
			othersUsed += h.Used
			if h.Used > 0 && h.Oldest+int64(rateWindow) > t && (othersOldest == 0 || h.Oldest < othersOldest) {
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
func (lg *requestLog) local(limit int, t int64, count bool) decision {
	if lg.n >= limit {
		oldest := lg.times[lg.head]
		return decision{reset: resetAt(oldest), retry: time.Duration(oldest + int64(rateWindow) - t)}
	}
	if !count {
		return decision{allowed: true, remaining: limit - lg.n}
	}
	if lg.n > 0 { // keep the log in order even if the clock steps back
		t = max(t, lg.newest())
	}
	lg.push(t, limit)
	return decision{allowed: true, remaining: limit - lg.n, reset: resetAt(lg.times[lg.head])}
}

// grant allows (and, if count, counts) a request within the node's share.
// Remaining and Reset are the cluster's as of the last update.
func (lg *requestLog) grant(limit int, t int64, count bool) decision {
	if count {
		if lg.n > 0 {
			t = max(t, lg.newest())
		}
		lg.push(t, limit)
	}
	d := decision{allowed: true, remaining: max(0, limit-lg.n-lg.othersUsed)}
	if lg.n > 0 {
		oldest := lg.times[lg.head]
		if lg.othersOldest != 0 && lg.othersOldest < oldest && lg.othersOldest+int64(rateWindow) > t {
			oldest = lg.othersOldest
		}
		d.reset = resetAt(oldest)
	}
	return d
}

// refuse answers a request for which the cluster has no budget left: it is
// allowed again once the oldest request counted anywhere (as of the last
// update) leaves the window, or in a second if none is known.
func (lg *requestLog) refuse(t int64) decision {
	next := int64(0)
	for _, o := range []int64{lg.oldest(), lg.othersOldest} {
		if o != 0 && o+int64(rateWindow) > t && (next == 0 || o < next) {
			next = o
		}
	}
	if next == 0 {
		return decision{reset: time.Unix(0, t).Add(time.Second), retry: time.Second}
	}
	return decision{reset: resetAt(next), retry: time.Duration(next + int64(rateWindow) - t)}
}

func (lg *requestLog) oldest() int64 {
	if lg.n == 0 {
		return 0
	}
	return lg.times[lg.head]
}

func resetAt(oldest int64) time.Time { return time.Unix(0, oldest).Add(rateWindow) }

// sweep drops the logs of keys with no request in the last window, so
// keys seen once (client addresses, say) do not stay forever. A dropped
// log's share stays in the ledger until its lease lapses or a new log of
// the key updates it.
func (l *limiter) sweep(now int64) {
	for k, lg := range l.logs {
		if lg.n == 0 || lg.newest() <= now-int64(rateWindow) {
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

// clientAddr is the address requests without a valid key are counted
// under: the peer's IP, or, when the peer is a proxy the operator trusts
// (--trusted-proxies), the address that proxy reports in X-Forwarded-For
// (the rightmost entry that is not itself a trusted proxy). Without
// trusted proxies X-Forwarded-For is ignored: any client can write it.
// IPv6 addresses count by their /64, which one host usually holds whole.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	addr := peerAddr(r.RemoteAddr)
	if addr.IsValid() && len(trusted) > 0 && inPrefixes(addr, trusted) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed entry: stop at the last proxy we trust
			}
			addr = hop.Unmap()
			if !inPrefixes(addr, trusted) {
				break
			}
		}
	}
	if !addr.IsValid() {
		return r.RemoteAddr
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR
// prefixes (--trusted-proxies).
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, &net.ParseError{Type: "IP address or CIDR prefix", Text: part}
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
