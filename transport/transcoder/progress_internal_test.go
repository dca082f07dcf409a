package transcoder

import (
	"math"
	"testing"
	"time"
)

// The speed is seconds of video made per second, smoothed; the time left
// is what remains at that speed; both are unknown until two samples, for
// a video of unknown length, and while the encoder all but stands still.
func TestEstimator(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	f := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return math.Round(*p*100) / 100
	}
	type sample struct {
		sec, frac   float64
		speed, left float64 // -1: nil
	}
	for _, tc := range []struct {
		name     string
		duration float64
		samples  []sample
	}{
		{"steady 2× on a 60 s video", 60, []sample{
			{0, 0, -1, -1},
			{1, 2.0 / 60, 2, 29},
			{2, 4.0 / 60, 2, 28},
			{3, 6.0 / 60, 2, 27},
		}},
		{"a slower stretch moves the speed part of the way", 100, []sample{
			{0, 0, -1, -1},
			{1, 0.04, 4, 24},
			{2, 0.05, 3.1, 30.65}, // 0.3×1 + 0.7×4
		}},
		{"stalled", 100, []sample{
			{0, 0.5, -1, -1},
			{10, 0.5, -1, -1},
			{20, 0.5, -1, -1},
		}},
		{"no length", 0, []sample{
			{0, 0, -1, -1},
			{1, 0.5, -1, -1},
		}},
		{"a week or more left is no estimate", 1e7, []sample{
			{0, 0, -1, -1},
			{1, 0.0000001, 1, -1},
		}},
		{"the same instant twice", 60, []sample{
			{0, 0, -1, -1},
			{0, 0.5, -1, -1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := estimator{duration: tc.duration}
			for i, s := range tc.samples {
				speed, left := e.observe(at(s.sec), s.frac)
				if f(speed) != s.speed || f(left) != s.left {
					t.Fatalf("sample %d: speed %v left %v, want %v %v", i, f(speed), f(left), s.speed, s.left)
				}
			}
		})
	}
}
