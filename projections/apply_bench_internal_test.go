package projections

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/benchstore"
)

// BenchmarkDecodeAndApply measures kino's own share of a rebuild, without
// NATS: decoding 200k synthetic events from their stored bodies, and
// applying them to a fresh bbolt file in RebuildBatch transactions with one
// scratch, as a rebuild does. Steadier than BenchmarkRebuild on a shared
// machine; the allocation figures are what the GC pays for.
//
//	go test -run '^$' -bench DecodeAndApply -benchtime 3x ./projections
func BenchmarkDecodeAndApply(b *testing.B) {
	const n = 200_000
	events := benchstore.Synthetic(n)
	bodies := make([][]byte, n)
	for i := range events {
		events[i].Seq = uint64(i + 1)
		raw, err := domain.Encode(events[i])
		if err != nil {
			b.Fatal(err)
		}
		bodies[i] = raw
	}
	perEvent := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for j, raw := range bodies {
				if _, err := domain.DecodeAs(events[j].Type, raw); err != nil {
					b.Fatal(err)
				}
			}
		}
		perEvent(b)
	})
	b.Run("apply", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			db, err := OpenDB(filepath.Join(b.TempDir(), "p.db"))
			if err != nil {
				b.Fatal(err)
			}
			s := newScratch()
			b.StartTimer()
			for from := 0; from < n; from += RebuildBatch {
				batch := events[from:min(from+RebuildBatch, n)]
				if err := db.update(func(tx *bolt.Tx) error { return applyBatch(tx, batch, s) }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			db.Discard()
			b.StartTimer()
		}
		perEvent(b)
	})
}
