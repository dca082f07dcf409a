package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
	"github.com/nats-io/nats.go/jetstream"
)

// ProgressBucket is the KV bucket holding the progress of running jobs.
// Progress is not an event: it changes every second and means nothing
// once the job ends, so it lives beside the stream, with a TTL.
const ProgressBucket = natsconn.ProgressBucket

// Progress publishes and follows per-video processing progress (0..1),
// with the encoder's speed and the time left when the worker knows them.
type Progress struct {
	kv          jetstream.KeyValue
	reconnected func() <-chan struct{} // closed at the connection's next reconnection
	log         *slog.Logger

	mu     sync.RWMutex
	values map[string]ProgressReport
}

// ProgressReport is what a worker publishes about a running job. Speed
// (× real time) and ETA (seconds left) are nil until the worker can tell.
// Stored as JSON ({"p":0.425,"s":1.9,"e":31}); kino before 0.14 stored
// the progress alone as a plain number, which is still read.
type ProgressReport struct {
	Progress float64  `json:"p"`
	Speed    *float64 `json:"s,omitempty"`
	ETA      *float64 `json:"e,omitempty"`
}

// maxProgressValue bounds a progress value read from the bucket: a
// report is some 40 bytes, and whoever may write the bucket (a worker's
// credentials) must not make every API node hold megabytes per key.
const maxProgressValue = natsconn.MaxProgressValue

// parseProgress reads a stored value: a report, or an older worker's
// plain number. Values out of range are clamped; NaN and infinities,
// oversized and unreadable values are refused.
func parseProgress(raw []byte) (ProgressReport, bool) {
	if len(raw) == 0 || len(raw) > maxProgressValue {
		return ProgressReport{}, false
	}
	var r ProgressReport
	if raw[0] == '{' {
		if err := json.Unmarshal(raw, &r); err != nil {
			return ProgressReport{}, false
		}
	} else {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return ProgressReport{}, false
		}
		r.Progress = f
	}
	if math.IsNaN(r.Progress) || math.IsInf(r.Progress, 0) {
		return ProgressReport{}, false
	}
	r.Progress = min(max(r.Progress, 0), 1)
	r.Speed = bounded(r.Speed, 0, maxSpeed)
	r.ETA = bounded(r.ETA, 0, MaxETA)
	return r, true
}

// MaxETA is the longest time left reported (a week, in seconds); longer
// estimates are not estimates.
const MaxETA = 7 * 24 * 3600

// maxSpeed bounds a reported speed (× real time).
const maxSpeed = 10000

// bounded is *f when it is a number within [lo, hi], else nil.
func bounded(f *float64, lo, hi float64) *float64 {
	if f == nil || math.IsNaN(*f) || *f < lo || *f > hi {
		return nil
	}
	return f
}

// OpenProgress creates or opens the progress bucket. A store that does not
// manage kino's streams (a worker) only opens it: kino serve created it.
// Open has done so once already (retried while a cluster gets ready).
func OpenProgress(ctx context.Context, s *eventstore.Store) (*Progress, error) {
	c := s.NATS()
	kv := c.Progress
	if kv == nil {
		var err error
		if kv, err = c.ProgressBucket(ctx); err != nil {
			return nil, err
		}
	}
	return &Progress{kv: kv, reconnected: c.NextReconnect, log: c.Log, values: make(map[string]ProgressReport)}, nil
}

// Set records the progress of a video (without speed or time left).
func (p *Progress) Set(ctx context.Context, videoID string, frac float64) error {
	return p.Report(ctx, videoID, ProgressReport{Progress: frac})
}

// Report records the progress of a video, with its speed and time left
// when known (out-of-range ones are left out).
func (p *Progress) Report(ctx context.Context, videoID string, r ProgressReport) error {
	if math.IsNaN(r.Progress) || math.IsInf(r.Progress, 0) {
		r.Progress = 0
	}
	r.Progress = math.Round(min(max(r.Progress, 0), 1)*1000) / 1000
	if r.Speed = bounded(r.Speed, 0, maxSpeed); r.Speed != nil {
		s := math.Round(*r.Speed*100) / 100
		r.Speed = &s
	}
	if r.ETA = bounded(r.ETA, 0, MaxETA); r.ETA != nil {
		e := math.Round(*r.ETA)
		r.ETA = &e
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = p.kv.Put(ctx, videoID, raw)
	return err
}

// Clear removes the progress of a video whose job ended.
func (p *Progress) Clear(ctx context.Context, videoID string) error {
	err := p.kv.Delete(ctx, videoID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// Get is the last progress seen by Follow.
func (p *Progress) Get(videoID string) (float64, bool) {
	r, ok := p.Live(videoID)
	return r.Progress, ok
}

// Live is the last report seen by Follow.
func (p *Progress) Live(videoID string) (ProgressReport, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	r, ok := p.values[videoID]
	return r, ok
}

// Follow keeps Get up to date with every worker's progress until ctx ends.
//
// The watch starts again from the bucket's current values whenever the
// connection to NATS is made again: the server may have restarted without
// the bucket (it lives in memory on a single server), and a watch left to
// resume by itself would wait for sequences the new bucket has not reached,
// or end. Values not in the bucket any more are dropped then.
func (p *Progress) Follow(ctx context.Context) error {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		reconnected := p.reconnected()
		err := p.watch(ctx, reconnected)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			p.log.Debug("follow progress", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-reconnected:
			wait = 100 * time.Millisecond
		case <-time.After(wait):
			wait = min(2*wait, 5*time.Second)
		}
	}
	return nil
}

// watch follows the bucket until ctx ends, stop is closed or the watch
// ends; the values are replaced by the bucket's once its initial values
// have come.
func (p *Progress) watch(ctx context.Context, stop <-chan struct{}) error {
	w, err := p.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("follow progress: %w", err)
	}
	defer func() { _ = w.Stop() }()
	initial := map[string]ProgressReport{} // nil once the initial values are in
	for {
		var e jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case e, ok = <-w.Updates():
		}
		if !ok {
			return errors.New("follow progress: the watch ended")
		}
		p.mu.Lock()
		values := p.values
		if initial != nil {
			values = initial
		}
		switch {
		case e == nil: // the initial values have been delivered
			p.values, initial = initial, nil
		case e.Operation() == jetstream.KeyValuePut:
			if r, ok := parseProgress(e.Value()); ok {
				values[e.Key()] = r
			} else {
				delete(values, e.Key())
			}
		default:
			delete(values, e.Key())
		}
		p.mu.Unlock()
	}
}
