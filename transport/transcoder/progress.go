package transcoder

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kino-video/kino/eventstore/kv"
)

// speedWeight is the weight of the newest sample in the smoothed speed
// (an exponential moving average over samples at least a second apart):
// enough to follow a slower scene within seconds, not to jump with every
// keyframe.
const speedWeight = 0.3

// minSpeed is the slowest speed (× real time) an estimate is given for:
// below it the encoder is all but stalled, and any time left would be a
// guess.
const minSpeed = 0.01

// estimator turns progress samples of a video of duration seconds into a
// smoothed speed (seconds of video made per second) and the time left.
type estimator struct {
	duration float64
	lastAt   time.Time
	lastFrac float64
	speed    float64 // smoothed; 0 until two samples
}

// observe takes the progress frac at now and returns the speed and the
// time left, nil while unknown (the first sample, no length, a stall).
func (e *estimator) observe(now time.Time, frac float64) (speed, eta *float64) {
	if e.duration <= 0 {
		return nil, nil
	}
	if e.lastAt.IsZero() || !now.After(e.lastAt) {
		if e.lastAt.IsZero() {
			e.lastAt, e.lastFrac = now, frac
		}
		return nil, nil
	}
	dt := now.Sub(e.lastAt).Seconds()
	inst := max(frac-e.lastFrac, 0) * e.duration / dt
	e.lastAt, e.lastFrac = now, frac
	if e.speed == 0 {
		e.speed = inst
	} else {
		e.speed = speedWeight*inst + (1-speedWeight)*e.speed
	}
	if e.speed < minSpeed {
		return nil, nil
	}
	s := e.speed
	left := e.duration * (1 - min(max(frac, 0), 1)) / s
	if left > kv.MaxETA {
		return &s, nil
	}
	return &s, &left
}

// removeOutputs removes what earlier attempts of a video that is now
// FAILED published (a progressive attempt publishes as it goes), and its
// progress.
func (t *Transcoder) removeOutputs(ctx context.Context, log *slog.Logger, id string) {
	if err := t.cfg.Media.RemoveOutputs(context.WithoutCancel(ctx), id); err != nil {
		log.Warn("remove outputs of a failed video", "err", err)
	}
	t.clearProgress(id)
}

// progressReporter publishes progress at most once a second (and always
// the first value), with the speed and time left once they are known;
// length is the video's length in seconds.
func (t *Transcoder) progressReporter(ctx context.Context, id string, length float64) func(float64) {
	var mu sync.Mutex
	var last time.Time
	est := estimator{duration: length}
	return func(f float64) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if !last.IsZero() && now.Sub(last) < time.Second {
			return
		}
		last = now
		f = min(max(f, 0), 1)
		speed, eta := est.observe(now, f)
		if err := t.cfg.Progress.Report(ctx, id, kv.ProgressReport{Progress: f, Speed: speed, ETA: eta}); err != nil && ctx.Err() == nil {
			t.cfg.Log.Debug("progress", "video_id", id, "err", err)
		}
	}
}
