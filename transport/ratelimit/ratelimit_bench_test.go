package ratelimit

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
)

// BenchmarkLimiter measures one request's rate-limit decision: the sliding
// log of a busy business account (1000 a minute, always full), from every
// core at once, across 1000 accounts. "local" counts in the process;
// "shared" keeps each account's share in the ledger on an embedded NATS,
// as kino serve does. The simulated clock runs 50 µs per request, about a
// thousand times faster than real traffic of that size, so the ledger is
// asked (lease renewals every 5 s, refusals every second) a thousand times
// more often per request than in real time: an upper bound of its cost.
func BenchmarkLimiter(b *testing.B) {
	b.Run("local", func(b *testing.B) { benchLimiter(b, New()) })
	b.Run("shared", func(b *testing.B) {
		srv := eventstoretest.Server(b, b.TempDir())
		ledger, err := kv.OpenRateLimits(context.Background(), eventstoretest.Open(b, srv.URL(), srv.Auth(eventstore.RoleServe)))
		if err != nil {
			b.Fatal(err)
		}
		benchLimiter(b, NewShared(ledger, "acct:", "bench", quiet))
	})
}

func benchLimiter(b *testing.B, l *Limiter) {
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	accounts := make([]string, 1000)
	for i := range accounts {
		accounts[i] = "acct-" + strconv.Itoa(i)
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			// 20 requests per simulated ms: every log fills and slides.
			l.Allow(accounts[i%int64(len(accounts))], 1000, start.Add(time.Duration(i)*50*time.Microsecond))
		}
	})
}
