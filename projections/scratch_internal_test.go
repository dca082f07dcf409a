package projections

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// The arena is written over by every batch: read models built by one
// scratch reused across many small batches (chunks refilled many times,
// records of a video read back in a later batch) must be exactly those
// built with a fresh scratch per batch.
func TestScratchReusedAcrossBatchesWritesWhatAFreshOneWrites(t *testing.T) {
	events := Synthetic(20_000)
	for i := range events {
		events[i].Seq = uint64(i + 1)
	}
	build := func(reuse bool) string {
		db, err := OpenDB(filepath.Join(t.TempDir(), "p.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		s := newScratch()
		for from := 0; from < len(events); from += 700 { // batches cut videos in two
			if !reuse {
				s = newScratch()
			}
			batch := events[from:min(from+700, len(events))]
			if err := db.update(func(tx *bolt.Tx) error { return applyBatch(tx, batch, s) }); err != nil {
				t.Fatal(err)
			}
		}
		if reuse && len(s.chunks) < 1 {
			t.Fatal("the arena was never used")
		}
		var out bytes.Buffer
		if err := db.Dump(&out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	fresh, reused := build(false), build(true)
	if fresh != reused {
		t.Fatalf("a reused scratch wrote different read models (%d vs %d bytes)", len(reused), len(fresh))
	}
	if !strings.Contains(fresh, `"status":"COMPLETED"`) || !strings.Contains(fresh, "videos_by_status") {
		t.Fatalf("dump lacks videos: %.300s", fresh)
	}
}

// scratch.marshal writes encoding/json's bytes (HTML escaped, nil slices
// as null) whatever the arena held before, values larger than a chunk too.
func TestScratchMarshalIsEncodingJSON(t *testing.T) {
	dur := 1e-7
	reason := "<b>&</b> \u2028 \xff"
	values := []any{
		&Video{ID: "01J", Filename: "a<b>&c.mp4", Duration: &dur, ErrorMessage: &reason, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)},
		&Collection{Name: strings.Repeat("long ", arenaChunk/4)}, // > one chunk
		&Webhook{Events: nil, URL: "https://example.com/?a=1&b=<2>"},
		&Delivery{StatusCode: 0, VideoID: ""},
	}
	s := newScratch()
	for round := 0; round < 3; round++ {
		var got [][]byte
		for _, v := range values {
			raw, err := s.marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, raw)
		}
		for i, v := range values { // earlier values are intact after later ones
			want, _ := json.Marshal(v)
			if !bytes.Equal(got[i], want) {
				t.Fatalf("round %d value %d:\n got %.200s\nwant %.200s", round, i, got[i], want)
			}
		}
		if k := s.seqKey(7, "acct", string(domain.StatusPending)); !bytes.Equal(k, seqKey(key("acct", string(domain.StatusPending)), 7)) {
			t.Fatalf("seqKey %q", k)
		}
		s.reset()
	}
}
