package eventstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// BenchmarkAccountCommandHistory times an account command (a plan change)
// on an account of 100 events and on one of 100 000 (signing keys created
// and deleted over and over, as a client may), taking turns, and reports
// each one's median and p99 and the ratio of the p99s. It also reports
// what reading the long history whole costs (load-all-ms), what every
// command paid before snapshots.
//
//	go test -run '^$' -bench AccountCommandHistory -benchtime 400x ./eventstore/
func BenchmarkAccountCommandHistory(b *testing.B) {
	ctx := context.Background()
	s := eventstoretest.Run(b)
	account := func(slug string, events int) domain.StreamID {
		id := domain.AccountStream(slug)
		res, err := eventstore.Execute[domain.Account](ctx, s, id, domain.CreateAccount{Slug: slug, Plan: domain.PlanFree})
		if err != nil {
			b.Fatal(err)
		}
		last := res.LastSeq()
		batch := make([]domain.Payload, 0, 200)
		for i := 1; i < events; i += 2 {
			key := fmt.Sprintf("sk-%06d", i)
			batch = append(batch, domain.SigningKeyCreated{KeyID: key, Algorithm: domain.SigningAlgorithm, PublicKey: "pk"}, domain.SigningKeyDeleted{KeyID: key})
			if len(batch) == cap(batch) || i+2 >= events {
				out, err := s.Append(ctx, id, last, batch)
				if err != nil {
					b.Fatal(err)
				}
				last, batch = out[len(out)-1].Seq, batch[:0]
			}
		}
		return id
	}
	small, large := account("small", 100), account("large", 100_000)

	start := time.Now()
	if _, _, err := s.Load(ctx, large); err != nil {
		b.Fatal(err)
	}
	loadAll := time.Since(start)
	// The first command on each folds its history once and stores a
	// snapshot (an account older than snapshots pays this once).
	plans := []domain.Plan{domain.PlanPro, domain.PlanFree}
	for _, id := range []domain.StreamID{small, large} {
		if _, err := eventstore.Execute[domain.Account](ctx, s, id, domain.ChangePlan{Plan: domain.PlanBusiness}); err != nil {
			b.Fatal(err)
		}
	}

	var times [2][]time.Duration
	i := 0
	for b.Loop() {
		for j, id := range []domain.StreamID{small, large} {
			t0 := time.Now()
			if _, err := eventstore.Execute[domain.Account](ctx, s, id, domain.ChangePlan{Plan: plans[i%2]}); err != nil {
				b.Fatal(err)
			}
			times[j] = append(times[j], time.Since(t0))
		}
		i++
	}
	pct := func(d []time.Duration, p float64) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(float64(len(d))*p))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(times[0], 0.5), "p50-ms@100")
	b.ReportMetric(pct(times[0], 0.99), "p99-ms@100")
	b.ReportMetric(pct(times[1], 0.5), "p50-ms@100k")
	b.ReportMetric(pct(times[1], 0.99), "p99-ms@100k")
	b.ReportMetric(pct(times[1], 0.99)/pct(times[0], 0.99), "p99-ratio")
	b.ReportMetric(float64(loadAll)/float64(time.Millisecond), "load-all-ms")
}
