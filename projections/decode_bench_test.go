package projections_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/benchstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

func BenchmarkTailDecodeOnly(b *testing.B) {
	s := eventstoretest.Run(b)
	ctx := context.Background()
	n := 200000
	if err := benchstore.Import(ctx, s, benchstore.Synthetic(n)); err != nil {
		b.Fatal(err)
	}
	stop := errors.New("stop")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := s.Tail(ctx, 1, func(e domain.Event, _ bool) error {
			if e.Seq >= uint64(n) {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
