package httpapi

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkLimiter measures one request's rate-limit decision: the sliding
// log of a busy business account (1000 a minute, always full), from every
// core at once, across 1000 accounts.
func BenchmarkLimiter(b *testing.B) {
	l := newLimiter()
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
			l.allow(accounts[i%int64(len(accounts))], 1000, start.Add(time.Duration(i)*50*time.Microsecond))
		}
	})
}
