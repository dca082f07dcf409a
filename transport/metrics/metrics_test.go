package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kino-video/kino/domain"
)

// The stream's events move the work's metrics: outcomes of attempts, the
// wait of each attempt (a retry and an interruption wait again), the time
// to playable, and deliveries.
func TestObserve(t *testing.T) {
	m := New()
	m.PlanOf = func(string) string { return "free" }
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ev := func(id string, at time.Duration, p domain.Payload) domain.Event {
		return domain.Event{AggregateID: id, OccurredAt: t0.Add(at), Data: p}
	}
	for _, e := range []domain.Event{
		ev("v1", 0, domain.UploadAccepted{Account: "acme"}),
		ev("v1", 2*time.Second, domain.TranscodeStarted{Account: "acme"}),
		ev("v1", 3*time.Second, domain.TranscodeInterrupted{Account: "acme"}),
		ev("v1", 5*time.Second, domain.TranscodeStarted{Account: "acme"}),
		ev("v1", 6*time.Second, domain.TranscodePlayable{Account: "acme"}),
		ev("v1", 9*time.Second, domain.TranscodeSucceeded{Account: "acme", Resolutions: []string{"360p", "240p"}}),
		ev("v2", 0, domain.UploadAccepted{Account: "acme"}),
		ev("v2", time.Second, domain.TranscodeStarted{Account: "acme"}),
		ev("v2", 2*time.Second, domain.TranscodeFailed{Account: "acme", Final: true}),
		ev("w", 0, domain.DeliverySucceeded{DurationMs: 120}),
		ev("w", 0, domain.DeliveryFailed{DurationMs: 3000}),
	} {
		m.Observe(e)
	}
	for _, c := range []struct {
		outcome string
		want    float64
	}{{"succeeded", 1}, {"failed", 1}, {"interrupted", 1}} {
		if got := testutil.ToFloat64(m.jobs.WithLabelValues(c.outcome)); got != c.want {
			t.Errorf("jobs %s = %v, want %v", c.outcome, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.wait); n != 1 {
		t.Errorf("wait series %d", n)
	}
	// Three waits: 2 s, 2 s (after the interruption) and 1 s.
	if got := histogramCount(t, m, "kino_transcode_wait_seconds"); got != 3 {
		t.Errorf("waits %d, want 3", got)
	}
	if got := histogramCount(t, m, "kino_playable_seconds"); got != 1 {
		t.Errorf("playable %d, want 1 (at the playable event, not again at success)", got)
	}
	if got := histogramCount(t, m, "kino_transcode_seconds_per_rendition"); got != 1 {
		t.Errorf("per rendition %d", got)
	}
	if testutil.ToFloat64(m.deliveries.WithLabelValues("succeeded")) != 1 || testutil.ToFloat64(m.deliveries.WithLabelValues("failed")) != 1 {
		t.Error("deliveries not counted")
	}
	if len(m.videos) != 0 {
		t.Errorf("%d videos still remembered after their ends", len(m.videos))
	}
	var nilMetrics *Metrics
	nilMetrics.Observe(ev("v3", 0, domain.UploadAccepted{}))
	nilMetrics.Request("/", "GET", 200, time.Second)
	nilMetrics.UploadBytes(10)
}

func histogramCount(t *testing.T, m *Metrics, name string) uint64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range fams {
		if f.GetName() == name {
			for _, s := range f.GetMetric() {
				n += s.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}
