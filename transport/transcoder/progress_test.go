package transcoder_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
)

// While a long video encodes, its worker reports the speed (seconds of
// video per second) and the time left with the progress, consistent with
// each other: time left = length × (1 - progress) / speed.
func TestProgressReportsSpeedAndTimeLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acc := e.account("acme", domain.PlanFree)
	const length = 300
	long := longClip(t, "long.mkv", length)
	id := e.uploadFile(acc, "long.mkv", long)
	progress := e.followProgress(t)
	deadline := time.Now().Add(60 * time.Second)
	var r kv.ProgressReport
	for {
		var ok bool
		if r, ok = progress.Live(id); ok && r.Speed != nil && r.ETA != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no speed and time left reported; last %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := length * (1 - r.Progress) / *r.Speed
	if *r.Speed <= 0 || r.Progress <= 0 || r.Progress >= 1 || math.Abs(*r.ETA-want) > 0.05*want+1 {
		t.Fatalf("report %v speed %v eta %v; want eta near %v", r.Progress, *r.Speed, *r.ETA, want)
	}
	t.Logf("progress %.3f at %.2f× real time, %.0f s left", r.Progress, *r.Speed, *r.ETA)
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(id), domain.DeleteVideo{Account: acc}); err != nil {
		t.Fatal(err)
	}
	if err := e.media.Remove(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}
