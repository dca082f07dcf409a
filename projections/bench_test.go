package projections_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/benchstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/projections"
)

// BenchmarkRebuild measures rebuilding every read model from n synthetic
// events beside a raw ordered consumer that writes the same messages into
// bbolt (1000 per transaction): the floor for reading the stream into a
// bbolt file. Run it alone:
//
//	go test -run '^$' -bench Rebuild -benchtime 1x ./projections
func BenchmarkRebuild(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			s := eventstoretest.Run(b)
			ctx := context.Background()
			if err := benchstore.Import(ctx, s, benchstore.Synthetic(n)); err != nil {
				b.Fatal(err)
			}
			last, err := s.LastSeq(ctx)
			if err != nil || last != uint64(n) {
				b.Fatalf("stream holds %d events (%v)", last, err)
			}
			b.Run("kino-rebuild", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					side, _, err := projections.BuildSide(ctx, s, filepath.Join(b.TempDir(), "p.db"), func(projections.Progress) {})
					if err != nil {
						b.Fatal(err)
					}
					side.Discard()
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
			b.Run("baseline-raw-ordered-consumer-into-bbolt", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					rawIntoBolt(b, ctx, s, uint64(n))
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		})
	}
}

func rawIntoBolt(b *testing.B, ctx context.Context, s *eventstore.Store, upTo uint64) {
	if err := benchstore.RawIntoBolt(ctx, s, filepath.Join(b.TempDir(), "raw.db"), upTo); err != nil {
		b.Fatal(err)
	}
}

// benchSizes are the stream sizes measured; KINO_BENCH_EVENTS=N measures
// just N (for profiling).
func benchSizes() []int {
	if n, err := strconv.Atoi(os.Getenv("KINO_BENCH_EVENTS")); err == nil {
		return []int{n}
	}
	return []int{250_000, 500_000, 1_000_000}
}
