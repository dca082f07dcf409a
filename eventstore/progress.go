package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ProgressBucket is the KV bucket holding the progress of running jobs.
// Progress is not an event: it changes every second and means nothing
// once the job ends, so it lives beside the stream, with a TTL.
const ProgressBucket = "KINO_PROGRESS"

// Progress publishes and follows per-video processing progress (0..1).
type Progress struct {
	kv jetstream.KeyValue

	mu     sync.RWMutex
	values map[string]float64
}

// OpenProgress creates or opens the progress bucket. A store that does not
// manage kino's streams (a worker) only opens it: kino serve created it.
// Open has done so once already (retried while a cluster gets ready).
func (s *Store) OpenProgress(ctx context.Context) (*Progress, error) {
	kv := s.progress
	if kv == nil {
		var err error
		if kv, err = s.progressBucket(ctx); err != nil {
			return nil, err
		}
	}
	return &Progress{kv: kv, values: make(map[string]float64)}, nil
}

func (s *Store) progressBucket(ctx context.Context) (jetstream.KeyValue, error) {
	if !s.cfg.Manage {
		kv, err := s.js.KeyValue(ctx, ProgressBucket)
		if err != nil {
			return nil, fmt.Errorf("progress bucket: %w (start kino serve first)", err)
		}
		return kv, nil
	}
	kv, err := s.bucket(ctx, true, jetstream.KeyValueConfig{
		Bucket:      ProgressBucket,
		Description: "kino: progress of running transcodes",
		TTL:         time.Hour,
		Storage:     volatileStorage(s.cfg.Replicas),
		Replicas:    s.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("progress bucket: %w", err)
	}
	return kv, nil
}

// Set records the progress of a video.
func (p *Progress) Set(ctx context.Context, videoID string, frac float64) error {
	_, err := p.kv.Put(ctx, videoID, []byte(strconv.FormatFloat(frac, 'f', 3, 64)))
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
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.values[videoID]
	return v, ok
}

// Follow keeps Get up to date with every worker's progress until ctx ends.
func (p *Progress) Follow(ctx context.Context) error {
	w, err := p.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("follow progress: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if e == nil { // the initial values have been delivered
				continue
			}
			p.mu.Lock()
			if e.Operation() == jetstream.KeyValuePut {
				if f, err := strconv.ParseFloat(string(e.Value()), 64); err == nil {
					p.values[e.Key()] = f
				}
			} else {
				delete(p.values, e.Key())
			}
			p.mu.Unlock()
		}
	}
}

// volatileStorage is the storage of buckets whose content may be lost
// (progress, send locks): memory on one server; files when replicated,
// because a replicated memory stream loses its copy on every restart of a
// node, and two of three nodes restarted after the third died could not
// elect a leader for it again (kino serve then refused to start).
func volatileStorage(replicas int) jetstream.StorageType {
	if replicas > 1 {
		return jetstream.FileStorage
	}
	return jetstream.MemoryStorage
}
