package projections

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrInUse: another process (a running kino serve) holds the read-model
// file.
var ErrInUse = errors.New("the read models are in use by another process")

// OpenIfFree opens the read-model file at path for an offline rebuild,
// failing at once with ErrInUse when another process (a running kino
// serve) has it open.
func OpenIfFree(path string) (*DB, error) {
	db, err := openDB(path, 200*time.Millisecond)
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%s: %w", path, ErrInUse)
	}
	return db, err
}

// RebuildFile is the offline rebuild of live (opened with OpenIfFree): it
// rebuilds it from source, or with verify compares it with a rebuild and
// returns up to max differences, by the same steps as Projector.Rebuild
// and Projector.Verify on a running service (rebuildFile), with no
// follower to pause.
func RebuildFile(ctx context.Context, source EventSource, live *DB, verify bool, max int, progress func(Progress)) ([]string, Progress, error) {
	noPause := func(context.Context) (func(), error) { return func() {}, nil }
	return rebuildFile(ctx, source, live, noPause, func(uint64) {}, verify, max, progress)
}

// rebuildFile is the one rebuild of a read-model file, online and offline:
// build a side file beside live from sequence 1 to the stream's end while
// live keeps answering; then pause live's writer (pause; its resume runs
// at the end), bring the side file (and, to verify, live too, reporting
// each applied sequence to advance) to the stream's end, and either swap
// the side file in for live or return up to max differences between them
// and remove it. final.Applied is live's checkpoint after a swap.
func rebuildFile(ctx context.Context, source EventSource, live *DB, pause func(context.Context) (func(), error),
	advance func(uint64), verify bool, max int, progress func(Progress)) (diffs []string, final Progress, err error) {
	suffix := ".rebuild"
	if verify {
		suffix = ".verify"
	}
	side, final, err := BuildSide(ctx, source, live.Path()+suffix, progress)
	if err != nil {
		return nil, final, err
	}
	swapped := false
	defer func() {
		if !swapped {
			side.Discard()
		}
	}()
	resume, err := pause(ctx)
	if err != nil {
		return nil, final, err
	}
	defer resume()
	last, err := source.LastSeq(ctx)
	if err != nil {
		return nil, final, err
	}
	if verify {
		// Both to the same sequence: the stream's end now.
		if err := build(ctx, source, live, last, func(pr Progress) { advance(pr.Applied) }); err != nil {
			return nil, final, err
		}
		if err := build(ctx, source, side, last, func(Progress) {}); err != nil {
			return nil, final, err
		}
		diffs, err := Diff(live, side, max)
		return diffs, final, err
	}
	if err := build(ctx, source, side, last, func(Progress) {}); err != nil {
		return nil, final, err
	}
	if err := live.replaceWith(side); err != nil {
		return nil, final, err
	}
	swapped = true
	cp, err := live.Checkpoint()
	final.Applied = cp
	return nil, final, err
}
