package projections

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// BenchmarkQueuePositions is the cost a PENDING video adds to an answer,
// here with 5000 PENDING videos, for the 1000th (the walk's bound) and the
// 10th: walk/ is one walk of the account's PENDING index (the first
// answer after a commit wrote one of the account's videos), kept/ the
// answers after it, from what the walk kept.
//
//	go test -run '^$' -bench QueuePositions ./projections
func BenchmarkQueuePositions(b *testing.B) {
	db, err := OpenDB(filepath.Join(b.TempDir(), "p.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var events []domain.Event
	at := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for i := range 5000 {
		events = append(events, domain.Event{ID: fmt.Sprintf("e%05d", i), Type: domain.TypeUploadAccepted, AggregateID: fmt.Sprintf("v%025d", i),
			Seq: uint64(i + 1), Version: 1, OccurredAt: at,
			Data: domain.UploadAccepted{Account: "acme", Collection: "c", CollectionName: "C", Filename: "f.mp4", OriginalSize: 1, Ext: ".mp4"}})
	}
	if err := db.update(func(tx *bolt.Tx) error { return applyBatch(tx, events, newScratch()) }); err != nil {
		b.Fatal(err)
	}
	for _, kept := range []bool{false, true} {
		for _, at := range []int{1000, 10} {
			name := fmt.Sprintf("walk/%d", at)
			if kept {
				name = fmt.Sprintf("kept/%d", at)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if !kept {
						db.caches.queue.forget([]string{"acme"}, false)
					}
					q, err := db.QueuePositions("acme", []uint64{uint64(at)}, 1000)
					if err != nil || q[0] != at {
						b.Fatal(q, err)
					}
				}
			})
		}
	}
}
