package eventstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// BenchmarkLoadAmongManySubjects loads aggregates of a stream with more
// subjects than JetStream indexes for wildcard reads (64k): an old one
// (two events, then 100 000 other aggregates' events), the newest one,
// and one whose two events have the 100 000 between them (a video
// changed long after its upload). It reports each one's load (old-ms,
// new-ms, spread-ms): reading up to the aggregate's last event, the old
// one costs what the newest does; asking past it, its read crossed every
// later message. The spread one's second read still crosses the messages
// between its events.
//
//	go test -run '^$' -bench LoadAmongManySubjects -benchtime 50x ./eventstore/
func BenchmarkLoadAmongManySubjects(b *testing.B) {
	ctx := context.Background()
	s := eventstoretest.Run(b)
	old := domain.CollectionStream("acme", "old")
	out, err := s.Append(ctx, old, 0, []domain.Payload{domain.CollectionCreated{Account: "acme", Slug: "old", Name: "Old"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Append(ctx, old, out[0].Seq, []domain.Payload{domain.CollectionRenamed{Name: "Older"}}); err != nil {
		b.Fatal(err)
	}
	spread := domain.CollectionStream("acme", "spread")
	first, err := s.Append(ctx, spread, 0, []domain.Payload{domain.CollectionCreated{Account: "acme", Slug: "spread", Name: "Spread"}})
	if err != nil {
		b.Fatal(err)
	}
	const others, writers = 100_000, 16
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < others; i += writers {
				slug := fmt.Sprintf("c%06d", i)
				if _, err := s.Append(ctx, domain.CollectionStream("acme", slug), 0, []domain.Payload{domain.CollectionCreated{Account: "acme", Slug: slug, Name: "C"}}); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
			}
		}(w)
	}
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	if _, err := s.Append(ctx, spread, first[0].Seq, []domain.Payload{domain.CollectionRenamed{Name: "Changed"}}); err != nil {
		b.Fatal(err)
	}
	newest := domain.CollectionStream("acme", fmt.Sprintf("c%06d", others-1))
	var took [3]time.Duration
	for b.Loop() {
		for i, id := range []domain.StreamID{old, newest, spread} {
			t0 := time.Now()
			events, _, err := s.Load(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(t0)
			if want := []int{2, 1, 2}[i]; len(events) != want {
				b.Fatalf("%s: %d events, want %d", id, len(events), want)
			}
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/1000/float64(b.N), "old-ms")
	b.ReportMetric(float64(took[1].Microseconds())/1000/float64(b.N), "new-ms")
	b.ReportMetric(float64(took[2].Microseconds())/1000/float64(b.N), "spread-ms")
}
