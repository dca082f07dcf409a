package projections

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// EventSource is what the projector reads: the stream from a sequence on,
// in order, following new events.
type EventSource interface {
	Tail(ctx context.Context, from uint64, fn func(e domain.Event, caughtUp bool) error) error
}

// MaxBatch bounds how many events share one bbolt transaction.
const MaxBatch = 1000

// Projector applies the stream to the read models, committing the last
// applied sequence with each batch.
type Projector struct {
	db     *DB
	source EventSource
	log    *slog.Logger

	mu      sync.Mutex
	applied uint64
	changed chan struct{} // closed and replaced on every commit
	failed  error
}

// NewProjector prepares a projector over db; Run starts it.
func NewProjector(db *DB, source EventSource, log *slog.Logger) (*Projector, error) {
	cp, err := db.Checkpoint()
	if err != nil {
		return nil, err
	}
	return &Projector{db: db, source: source, log: log, applied: cp, changed: make(chan struct{})}, nil
}

// Applied is the last sequence committed to the read models.
func (p *Projector) Applied() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// Run follows the stream from the checkpoint until ctx ends or an event
// cannot be applied (the read models then stay at the last good batch).
func (p *Projector) Run(ctx context.Context) error {
	from := p.Applied() + 1
	p.log.Info("projector starting", "from_seq", from)
	batch := make([]domain.Event, 0, MaxBatch)
	err := p.source.Tail(ctx, from, func(e domain.Event, caughtUp bool) error {
		batch = append(batch, e)
		if !caughtUp && len(batch) < MaxBatch {
			return nil
		}
		err := p.commit(batch)
		batch = batch[:0]
		return err
	})
	if err != nil && ctx.Err() == nil {
		p.mu.Lock()
		p.failed = err
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		return fmt.Errorf("projector: %w", err)
	}
	return nil
}

func (p *Projector) commit(batch []domain.Event) error {
	if len(batch) == 0 {
		return nil
	}
	if err := p.db.bolt.Update(func(tx *bolt.Tx) error { return applyBatch(tx, batch) }); err != nil {
		return err
	}
	p.mu.Lock()
	p.applied = max(p.applied, batch[len(batch)-1].Seq)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	return nil
}

// Err is why the projector stopped, or nil while it runs.
func (p *Projector) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// WaitFor blocks until the read models include sequence seq, ctx ends, or
// the projector has failed.
func (p *Projector) WaitFor(ctx context.Context, seq uint64) error {
	for {
		p.mu.Lock()
		applied, changed, failed := p.applied, p.changed, p.failed
		p.mu.Unlock()
		if applied >= seq {
			return nil
		}
		if failed != nil {
			return fmt.Errorf("wait for seq %d: %w", seq, failed)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for seq %d (applied %d): %w", seq, applied, ctx.Err())
		}
	}
}
