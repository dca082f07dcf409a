package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// EventSource is what the projector reads: the stream from a sequence on,
// in order, following new events, and where the stream ends.
type EventSource interface {
	Tail(ctx context.Context, from uint64, fn func(e domain.Event, caughtUp bool) error) error
	LastSeq(ctx context.Context) (uint64, error)
}

// MaxBatch bounds how many events share one bbolt transaction while
// following the stream; RebuildBatch while rebuilding.
const (
	MaxBatch     = 1000
	RebuildBatch = 10000
)

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

	rebuilding sync.Mutex    // one rebuild at a time
	pause      chan pauseReq // a rebuild asks the follower to stop
	following  bool          // Run is running (under mu)

	scratch *scratch // the follower's (commit runs in one goroutine)

	// read is the last sequence the follower read into a group, commits
	// the transactions it committed: how well groups form.
	read, commits atomic.Uint64

	// observe is told of each event the follower commits (never of a
	// rebuild's): metrics. Set before Run.
	observe func(domain.Event)
}

// Observe has fn told of each event the follower commits, once committed
// (never of the events a rebuild applies again). Call it before Run.
func (p *Projector) Observe(fn func(domain.Event)) { p.observe = fn }

// pauseReq is a rebuild's request to the follower: it closes stopped once
// it has stopped, then waits until the rebuild closes done.
type pauseReq struct {
	stopped, done chan struct{}
}

// NewProjector prepares a projector over db; Run starts it.
func NewProjector(db *DB, source EventSource, log *slog.Logger) (*Projector, error) {
	cp, err := db.Checkpoint()
	if err != nil {
		return nil, err
	}
	return &Projector{db: db, source: source, log: log, applied: cp, changed: make(chan struct{}), pause: make(chan pauseReq), scratch: newScratch()}, nil
}

// Applied is the last sequence committed to the read models.
func (p *Projector) Applied() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// Run follows the stream from the checkpoint until ctx ends. When an event
// cannot be applied it stops following (the read models stay at the last
// good batch, Err reports why) and waits: a Rebuild can still repair the
// read models, after which it follows again.
// A Rebuild pauses it and it resumes from the rebuilt checkpoint.
func (p *Projector) Run(ctx context.Context) error {
	p.mu.Lock()
	p.following = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.following = false
		p.mu.Unlock()
	}()
	for {
		var err error
		if p.Err() == nil {
			// A rebuild swaps in a file further on than Applied until its
			// advance: start after the file's own checkpoint.
			cp, cerr := p.db.Checkpoint()
			if cerr != nil {
				return cerr
			}
			from := max(cp, p.Applied()) + 1
			p.log.Info("projector following the stream", "from_seq", from)
			tctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- p.follow(tctx, from) }()
			select {
			case err = <-done:
			case req := <-p.pause:
				stop()
				<-done
				p.pausedFor(ctx, req)
				stop()
				continue
			}
			stop()
			if ctx.Err() != nil {
				return nil
			}
			p.mu.Lock()
			p.failed = err
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
			p.log.Error("projector stopped: the read models stay at the last good batch until a replay repairs them", "err", err)
		}
		// Stopped: wait for a rebuild. Its pause may end before it clears
		// the failure, so a commit after that (the rebuild's advance) is
		// also a reason to look again.
		p.mu.Lock()
		failed, changed := p.failed, p.changed
		p.mu.Unlock()
		if failed == nil {
			continue
		}
		select {
		case req := <-p.pause:
			p.pausedFor(ctx, req)
		case <-changed:
		case <-ctx.Done():
			return p.Err()
		}
	}
}

// pausedFor answers a rebuild's pause and waits until it is over.
func (p *Projector) pausedFor(ctx context.Context, req pauseReq) {
	close(req.stopped)
	select {
	case <-req.done:
	case <-ctx.Done():
	}
}

// follow applies the stream from sequence from on until ctx ends or a
// commit fails. Two goroutines share the work (group commit): this one
// reads and decodes the stream into a group while the committer writes
// the group before it, so under load one bbolt transaction and one fsync
// carry every event that arrived during the previous commit, and when
// idle an event is committed as soon as it arrives. A backlog is cut into
// groups of at most MaxBatch events; a group is taken once it is full or
// holds the last event the stream had when it was read.
func (p *Projector) follow(parent context.Context, from uint64) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	g := &group{wake: make(chan struct{}, 1), room: make(chan struct{}, 1), events: make([]domain.Event, 0, MaxBatch)}
	committed := make(chan error, 1)
	go func() {
		err := p.committer(ctx, g)
		if err != nil {
			cancel() // stop reading: the tail may be waiting for new events
		}
		committed <- err
	}()
	tailErr := p.source.Tail(ctx, from, func(e domain.Event, caughtUp bool) error {
		if err := g.add(ctx, e, caughtUp); err != nil {
			return err
		}
		p.read.Store(e.Seq)
		return nil
	})
	cancel()
	// A commit under way completes before follow returns: a rebuild's
	// swap waits for it. The reason follow ends is the committer's
	// failure, else the caller's ctx, else the tail's own (nil: the
	// stream's reader closed, and Run follows again).
	if err := <-committed; err != nil {
		return err
	}
	if err := parent.Err(); err != nil {
		return err
	}
	return tailErr
}

// group is the events read and not yet committed, handed from the
// stream's reader to the committer.
type group struct {
	wake chan struct{} // the group is ready to commit
	room chan struct{} // the committer took a group: a full one has room again

	mu     sync.Mutex
	events []domain.Event
	ready  bool // full, or holding the last event of the stream as read
}

// add puts e into the group, waiting while the group is full.
func (g *group) add(ctx context.Context, e domain.Event, caughtUp bool) error {
	for {
		g.mu.Lock()
		if len(g.events) < MaxBatch {
			g.events = append(g.events, e)
			if caughtUp || len(g.events) == MaxBatch {
				g.ready = true
				signal(g.wake)
			}
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		select {
		case <-g.room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// take returns the group if it is ready, leaving spare as the next one.
func (g *group) take(spare []domain.Event) ([]domain.Event, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ready {
		return nil, false
	}
	batch := g.events
	g.events, g.ready = spare[:0], false
	signal(g.room)
	return batch, true
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// committer commits each group as it becomes ready, until ctx ends or a
// commit fails.
func (p *Projector) committer(ctx context.Context, g *group) error {
	spare := make([]domain.Event, 0, MaxBatch)
	for {
		select {
		case <-g.wake:
		case <-ctx.Done():
			return nil
		}
		batch, ok := g.take(spare)
		if !ok {
			continue
		}
		if err := p.commit(batch); err != nil {
			return err
		}
		spare = batch
	}
}

func (p *Projector) commit(batch []domain.Event) error {
	if len(batch) == 0 {
		return nil
	}
	if err := p.db.update(func(tx *bolt.Tx) error { return applyBatch(tx, batch, p.scratch) }); err != nil {
		return err
	}
	p.db.keepCaches(batch, p.scratch) // before advance wakes the write that changed them
	p.commits.Add(1)
	p.advance(batch[len(batch)-1].Seq)
	if p.observe != nil {
		for _, e := range batch {
			p.observe(e)
		}
	}
	return nil
}

func (p *Projector) advance(seq uint64) {
	p.mu.Lock()
	p.applied = max(p.applied, seq)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
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

// Progress reports a rebuild's advance: events applied of total, and the
// rate so far.
type Progress struct {
	Applied, Total uint64
	Elapsed        time.Duration
}

// PerSecond is the rebuild's rate so far.
func (p Progress) PerSecond() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Applied) / p.Elapsed.Seconds()
}

// Rebuild builds every read model again from sequence 1 into a side file
// while the current ones keep answering, then swaps it in: the follower
// pauses only for the last events that arrived during the build. Reads
// never fail; a write's wait for its sequence may take a little longer.
func (p *Projector) Rebuild(ctx context.Context, progress func(Progress)) (Progress, error) {
	p.rebuilding.Lock()
	defer p.rebuilding.Unlock()
	_, final, err := rebuildFile(ctx, p.source, p.db, p.stopFollower, p.advance, false, 0, progress)
	if err != nil {
		return final, err
	}
	p.mu.Lock()
	p.failed = nil // the rebuilt read models hold every event: follow again
	p.mu.Unlock()
	p.advance(final.Applied)
	return final, nil
}

// stopFollower pauses Run (if it runs) and returns the function that lets
// it go on.
func (p *Projector) stopFollower(ctx context.Context) (resume func(), err error) {
	req := pauseReq{stopped: make(chan struct{}), done: make(chan struct{})}
	for {
		p.mu.Lock()
		following := p.following
		p.mu.Unlock()
		if !following {
			return func() {}, nil // nothing to pause
		}
		select {
		case p.pause <- req:
			select {
			case <-req.stopped:
				return func() { close(req.done) }, nil
			case <-ctx.Done():
				close(req.done)
				return nil, ctx.Err()
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond): // Run may have ended meanwhile
		}
	}
}

// BuildSide builds read models from sequence 1 up to the stream's current
// end into a new file at path (replacing any leftover), in large batches.
func BuildSide(ctx context.Context, source EventSource, path string, progress func(Progress)) (*DB, Progress, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, Progress{}, err
	}
	side, err := OpenDB(path)
	if err != nil {
		return nil, Progress{}, err
	}
	last, err := source.LastSeq(ctx)
	if err != nil {
		side.Discard()
		return nil, Progress{}, err
	}
	start := time.Now()
	var final Progress
	err = build(ctx, source, side, last, func(pr Progress) {
		pr.Elapsed = time.Since(start)
		final = pr
		progress(pr)
	})
	if err != nil {
		side.Discard()
		return nil, final, err
	}
	final.Elapsed = time.Since(start)
	return side, final, nil
}

// Discard closes and removes a side file.
func (db *DB) Discard() {
	_ = db.Close()
	_ = os.Remove(db.path)
}

var errBuilt = errors.New("built")

// CatchUp applies events after db's checkpoint up to sequence upTo, in
// batches of RebuildBatch, reporting after each.
func CatchUp(ctx context.Context, source EventSource, db *DB, upTo uint64, progress func(Progress)) error {
	return build(ctx, source, db, upTo, progress)
}

func build(ctx context.Context, source EventSource, db *DB, upTo uint64, progress func(Progress)) error {
	from, err := db.Checkpoint()
	if err != nil || from >= upTo {
		return err
	}
	// Two stages on two cores: this goroutine reads and decodes the stream
	// while the applier commits the previous batch.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []domain.Event, 2)
	// Applied batches come back to be filled again: four slices of
	// RebuildBatch events serve a whole rebuild.
	free := make(chan []domain.Event, 4)
	applied := make(chan error, 1)
	go func() {
		var err error
		s := newScratch()
		for b := range batches {
			if err != nil {
				continue // drain after a failure
			}
			if err = db.update(func(tx *bolt.Tx) error { return applyBatch(tx, b, s) }); err != nil {
				cancel()
				continue
			}
			db.keepCaches(b, s) // the live file caught up by a verify
			progress(Progress{Applied: b[len(b)-1].Seq, Total: upTo})
			select {
			case free <- b[:0]:
			default:
			}
		}
		applied <- err
	}()
	next := func() []domain.Event {
		select {
		case b := <-free:
			return b
		default:
			return make([]domain.Event, 0, RebuildBatch)
		}
	}
	batch := next()
	tailErr := source.Tail(ctx, from+1, func(e domain.Event, caughtUp bool) error {
		if e.Seq <= upTo {
			batch = append(batch, e)
		}
		if e.Seq < upTo && !caughtUp && len(batch) < RebuildBatch {
			return nil
		}
		if len(batch) > 0 {
			select {
			case batches <- batch:
			case <-ctx.Done():
				return ctx.Err()
			}
			batch = next()
		}
		if e.Seq >= upTo {
			return errBuilt
		}
		return nil
	})
	close(batches)
	if err := <-applied; err != nil {
		return err
	}
	if errors.Is(tailErr, errBuilt) {
		return nil
	}
	return tailErr
}

// Verify rebuilds the read models into a side file and compares them with
// the live ones at the same sequence (the follower pauses for the
// comparison), returning up to max differences. The side file is removed.
func (p *Projector) Verify(ctx context.Context, max int, progress func(Progress)) ([]string, Progress, error) {
	p.rebuilding.Lock()
	defer p.rebuilding.Unlock()
	return rebuildFile(ctx, p.source, p.db, p.stopFollower, p.advance, true, max, progress)
}
