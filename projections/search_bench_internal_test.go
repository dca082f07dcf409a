package projections

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// BenchmarkQueryVideos measures GET /v1/videos's read-model side at 100k
// videos in one account (titles of three words out of 5,000, a
// description of twelve, two tags out of 50, an order id each): a q
// search of a word and a prefix, a tag filter, a cursor page at depth
// 1,000 and the same page by offset. Each reports its p99 (ms) over the
// runs beside the mean.
//
//	go test -run '^$' -bench QueryVideos -benchtime 2000x ./projections
func BenchmarkQueryVideos(b *testing.B) {
	const n = 100_000
	db, err := OpenDB(filepath.Join(b.TempDir(), "p.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%c%c%d", 'a'+rune(i%26), 'a'+rune(i/26%26), i)
	}
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newScratch()
	for from := 0; from < n; from += RebuildBatch {
		var batch []domain.Event
		for i := from; i < min(from+RebuildBatch, n); i++ {
			tags := []string{fmt.Sprint("tag", rng.IntN(50)), fmt.Sprint("tag", rng.IntN(50))}
			if tags[0] == tags[1] {
				tags = tags[:1]
			}
			batch = append(batch, domain.Event{ID: fmt.Sprint("E", i), Type: domain.TypeUploadAccepted, Version: 1,
				AggregateID: fmt.Sprintf("V%07d", i), OccurredAt: base.Add(time.Duration(i) * time.Second), Seq: uint64(i + 1),
				Data: domain.UploadAccepted{Account: "acme", Collection: "main", Filename: "clip.mp4", OriginalSize: 1, Ext: ".mp4",
					Title: words(3), Description: words(12), Tags: tags, Metadata: map[string]string{"order_id": fmt.Sprint(i)}}})
		}
		if err := db.update(func(tx *bolt.Tx) error { return applyBatch(tx, batch, s) }); err != nil {
			b.Fatal(err)
		}
	}
	// The cursor of depth 1,000: the 1,000th video, newest first.
	page, err := db.QueryVideos("acme", VideoQuery{Limit: 1000})
	if err != nil || len(page.Videos) != 1000 {
		b.Fatal(err)
	}
	depth := page.Next
	for _, bc := range []struct {
		name string
		q    VideoQuery
	}{
		{"q word", VideoQuery{Words: []string{"wab26"}}},
		{"q word and prefix", VideoQuery{Words: []string{"wab26"}, Prefix: "wc"}},
		{"q prefix", VideoQuery{Prefix: "wzz"}},
		{"tag", VideoQuery{Tag: "tag7"}},
		{"cursor at depth 1000", VideoQuery{After: depth}},
		{"offset 1000", VideoQuery{Offset: 1000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q := bc.q
			q.Limit = 50
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := db.QueryVideos("acme", q); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
