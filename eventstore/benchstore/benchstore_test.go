package benchstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/eventstore/benchstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

func TestImportRawTailAndRawStream(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	const n = 500
	if err := benchstore.Import(ctx, s, benchstore.Synthetic(n)); err != nil {
		t.Fatal(err)
	}
	if last, err := s.LastSeq(ctx); err != nil || last != n {
		t.Fatalf("last sequence %d, %v; want %d", last, err, n)
	}
	var seen uint64
	if err := benchstore.RawTail(ctx, s, n, func(seq uint64, body []byte) error {
		if seq != seen+1 || len(body) == 0 {
			t.Fatalf("sequence %d after %d, %d bytes", seq, seen, len(body))
		}
		seen = seq
		return nil
	}); err != nil || seen != n {
		t.Fatalf("RawTail saw %d, %v", seen, err)
	}
	if err := benchstore.RawIntoBolt(ctx, s, filepath.Join(t.TempDir(), "raw.db"), n); err != nil {
		t.Fatal(err)
	}

	raw, err := benchstore.OpenRawStream(ctx, s, "KINO_TEST_RAW")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Delete(ctx)
	seq, err := raw.Publish(ctx, "a", 0, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Publish(ctx, "a", 0, []byte("y")); err == nil {
		t.Fatal("a stale expected sequence was accepted")
	}
	if _, err := raw.Publish(ctx, "a", seq, []byte("y")); err != nil {
		t.Fatal(err)
	}
}
