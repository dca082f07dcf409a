package main

import (
	"context"
	"io"
	"testing"

	"github.com/kino-video/kino/cmd/kino/bench"
)

// kino bench --quick --only playable runs only the playable measure, and
// finds the video playable no later than COMPLETED.
func TestBenchPlayableQuick(t *testing.T) {
	t.Parallel()
	rs, err := bench.Run(context.Background(), bench.Options{Quick: true, Only: []string{bench.PlayableMeasure},
		Start: startBenchKino, More: bench.Extra}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Kino <= 0 || rs[0].Kino > rs[0].Baseline || rs[0].Notes == "" {
		t.Fatalf("results: %+v", rs)
	}
}
