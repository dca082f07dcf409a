package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// rateWindow is the length of the sliding window of every request limit.
const rateWindow = time.Minute

// limiter allows at most limit requests per key in any rateWindow: a
// sliding log. For each key it keeps the times of the requests it allowed
// in the last window (at most limit of them, in a ring), so no 60 s span
// ever holds more than limit allowed requests, wherever it starts. (A
// fixed window lets 2x the limit through across its boundary; a token
// bucket lets the bucket plus a minute's refill through.) Memory is 8
// bytes per request counted: 8 KB for an account on a 1000/min plan.
//
// It lives in the process: each API node counts the requests it serves
// (docs/operations.md).
type limiter struct {
	mu      sync.Mutex
	logs    map[string]*requestLog
	sweepAt time.Time
}

// requestLog is the ring of one key's allowed requests, oldest first, as
// Unix nanoseconds. It grows up to the key's limit.
type requestLog struct {
	times []int64
	head  int // index of the oldest
	n     int
}

func newLimiter() *limiter { return &limiter{logs: make(map[string]*requestLog)} }

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
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweepAt) {
		l.sweep(t)
		l.sweepAt = now.Add(rateWindow)
	}
	lg := l.logs[key]
	if lg == nil {
		lg = &requestLog{}
		l.logs[key] = lg
	}
	lg.expire(t - int64(rateWindow))
	if lg.n >= limit {
		oldest := lg.times[lg.head]
		return decision{reset: resetAt(oldest), retry: time.Duration(oldest + int64(rateWindow) - t)}
	}
	if lg.n > 0 { // keep the log in order even if the clock steps back
		t = max(t, lg.newest())
	}
	lg.push(t, limit)
	return decision{allowed: true, remaining: limit - lg.n, reset: resetAt(lg.times[lg.head])}
}

// over reports, without counting anything, whether key has used its limit.
func (l *limiter) over(key string, limit int, now time.Time) (bool, time.Duration) {
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	lg := l.logs[key]
	if lg == nil {
		return false, 0
	}
	lg.expire(t - int64(rateWindow))
	if lg.n < limit {
		return false, 0
	}
	return true, time.Duration(lg.times[lg.head] + int64(rateWindow) - t)
}

func resetAt(oldest int64) time.Time { return time.Unix(0, oldest).Add(rateWindow) }

// sweep drops the logs of keys with no request in the last window, so
// keys seen once (client addresses, say) do not stay forever.
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
