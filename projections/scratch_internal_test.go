package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/benchstore"
)

// The arena is written over by every batch: read models built by one
// scratch reused across large batches (chunks of the arena and of the slab
// refilled many times, and crossed within one transaction; records of a
// video read back in a later batch; renames flushing the cached videos in
// the middle of a batch) must be exactly those built in batches of 50
// events with a fresh scratch each, which never reach a chunk's end.
func TestScratchReusedAcrossBatchesWritesWhatSmallBatchesWrite(t *testing.T) {
	var events []domain.Event
	for i, e := range benchstore.Synthetic(60_000) {
		if i > 0 && i%7_000 == 0 {
			r := e
			r.AggregateID, r.Type = "acct-3_c3", domain.TypeCollectionRenamed
			r.Data = domain.CollectionRenamed{Account: "acct-3", Slug: "c3", Name: fmt.Sprintf("Renamed %d", i)}
			events = append(events, r)
		}
		events = append(events, e)
	}
	for i := range events {
		events[i].Seq = uint64(i + 1)
	}
	build := func(per int, reuse bool) string {
		db, err := OpenDB(filepath.Join(t.TempDir(), "p.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.bolt.NoSync = true // a test file
		s := newScratch()
		crossed := false
		for from := 0; from < len(events); from += per { // batches cut videos in two
			if !reuse {
				s = newScratch()
			}
			batch := events[from:min(from+per, len(events))]
			if err := db.update(func(tx *bolt.Tx) error { return applyBatch(tx, batch, s) }); err != nil {
				t.Fatal(err)
			}
			crossed = crossed || s.cur > 0
		}
		if reuse && (!crossed || len(s.slab) < 2) {
			t.Fatalf("no batch went past an arena chunk (%v) or a slab chunk (%d)", crossed, len(s.slab))
		}
		var out bytes.Buffer
		if err := db.Dump(&out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	fresh := build(50, false)
	reused := build(8_000, true) // about 2 400 videos a batch: two slab chunks, over 1 MiB
	if fresh != reused {
		t.Fatalf("a reused scratch wrote different read models (%d vs %d bytes)", len(reused), len(fresh))
	}
	for _, want := range []string{`"status":"COMPLETED"`, "videos_by_status", `"collectionName":"Renamed 56000"`, `"name":"Renamed 56000"`} {
		if !strings.Contains(fresh, want) {
			t.Fatalf("dump lacks %s", want)
		}
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
