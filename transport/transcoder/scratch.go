package transcoder

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/media"
)

// The scratch directory holds one work directory per running attempt,
// <scratch>/<id>-<random>/, where ffmpeg reads its input and writes its
// outputs, beside a lock file <id>-<random>.lock. The process running the
// attempt holds an exclusive flock on that file for as long as the attempt
// runs; the kernel drops it when the process dies, however it dies (kill
// -9 included). Any process sharing the scratch directory removes the work
// directories whose lock it can take: at its transcoder's start and every
// sweepEvery after. The lock file is created and locked before its
// directory exists, so a directory with a lock file is never taken for
// dead while its attempt runs; a directory without one (left by a kino
// from before the locks) goes once it has not changed for legacyAge.
//
// The lock file lives in the scratch root (0711, kino's), not in the work
// directory, which belongs to ffmpeg's user: ffmpeg cannot touch it. Its
// descriptor is close-on-exec, so no ffmpeg ever holds it and keeps a dead
// attempt looking alive.
const (
	lockSuffix = ".lock"
	sweepEvery = time.Minute
	legacyAge  = time.Hour
	// staleLock is how old a lock file without its directory must be
	// before a sweep removes it: a new attempt's lock file exists, locked,
	// a moment before its directory.
	staleLock = time.Minute
)

// FetchFunc puts the original of video id (extension ext) at dst, a path
// in a work directory that does not exist yet: a link or a copy.
type FetchFunc func(ctx context.Context, id, ext, dst string) error

// fetchFrom is the FetchFunc of a media store. A missing original is
// reported without its NotFound kind: it is not the video's NotFound (a
// deleted video is found by its events), and a worker whose media is not
// (yet) the shared one must not fail the video.
func fetchFrom(m Media) FetchFunc {
	return func(ctx context.Context, id, ext, dst string) error {
		if err := m.Fetch(ctx, id, ext, dst); err != nil {
			if eventstore.IsUnavailable(err) {
				return outage{err}
			}
			return fmt.Errorf("original: %v", err)
		}
		return nil
	}
}

// scratch is the directory of running attempts.
type scratch struct {
	root  string
	owner *ffmpeg.User // the work directories' owner (ffmpeg's user), nil for kino's
	fetch FetchFunc
}

// openScratch makes root (0711: ffmpeg's user passes through to its own
// work directory, and lists nothing).
func openScratch(root string, owner *ffmpeg.User, fetch FetchFunc) (*scratch, error) {
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	if err := os.Chmod(root, 0o711); err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	return &scratch{root: root, owner: owner, fetch: fetch}, nil
}

// attemptDir is one attempt's work directory, alive while its lock is held.
type attemptDir struct {
	Dir  string
	lock *os.File
}

// Remove removes the work directory, then its lock file, then lets the lock go.
func (a *attemptDir) Remove() error {
	err := os.RemoveAll(a.Dir)
	if rerr := os.Remove(a.lock.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return errors.Join(err, a.lock.Close())
}

// make creates the work directory of an attempt on video id, holding only
// its input, input<ext> (mode 0644 when the directory is given to
// ffmpeg's user: it is then that user's, 0700). The caller Removes it.
func (s *scratch) make(ctx context.Context, id, ext string) (*attemptDir, string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := id + "-" + hex.EncodeToString(b[:])
	dir := filepath.Join(s.root, name)
	lock, err := os.OpenFile(dir+lockSuffix, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", fmt.Errorf("scratch: %w", err)
	}
	a := &attemptDir{Dir: dir, lock: lock}
	fail := func(err error) (*attemptDir, string, error) {
		_ = a.Remove()
		return nil, "", err
	}
	if err := lockFile(lock); err != nil {
		return fail(fmt.Errorf("scratch: lock %s: %w", name, err))
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fail(fmt.Errorf("scratch: %w", err))
	}
	in := filepath.Join(dir, media.InputName(ext))
	if err := s.fetch(ctx, id, ext, in); err != nil {
		return fail(fmt.Errorf("fetch original: %w", err))
	}
	if s.owner != nil {
		if err := os.Chmod(in, 0o644); err != nil {
			return fail(err)
		}
		if err := os.Chown(dir, int(s.owner.UID), int(s.owner.GID)); err != nil {
			return fail(err)
		}
	}
	return a, in, nil
}

// sweep removes the work directories of attempts no process runs any
// more, and returns their names.
func (s *scratch) sweep() ([]string, error) {
	if !canLock {
		return nil, nil
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("scratch sweep: %w", err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			dirs[e.Name()] = true
		}
	}
	var removed []string
	for _, e := range entries {
		p := filepath.Join(s.root, e.Name())
		switch {
		case e.IsDir():
			gone, err := s.sweepDir(p)
			if err != nil {
				return removed, err
			}
			if gone {
				removed = append(removed, e.Name())
			}
		case strings.HasSuffix(e.Name(), lockSuffix) && !dirs[strings.TrimSuffix(e.Name(), lockSuffix)]:
			// A lock whose directory is gone: its attempt died between the
			// two, or while removing its directory.
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleLock {
				if f, ok := tryLock(p); ok {
					_ = os.Remove(p)
					f.Close()
				}
			}
		}
	}
	return removed, nil
}

// stagedSuffix names the directory beside an attempt's work directory
// where progressive publishing stages its rewritten playlists
// (progressive.go): it lives and dies with its attempt's lock.
const stagedSuffix = ".playlists"

// sweepDir removes the work directory dir when no process holds its lock
// (for a staging directory, its attempt's lock).
func (s *scratch) sweepDir(dir string) (bool, error) {
	lock := dir + lockSuffix
	staged := strings.HasSuffix(dir, stagedSuffix)
	if staged {
		lock = strings.TrimSuffix(dir, stagedSuffix) + lockSuffix
	}
	f, ok := tryLock(lock)
	if staged {
		// Held: the attempt runs, however long (the hour of legacy
		// directories does not apply). Gone or free: the attempt is over.
		if f == nil && !ok {
			return false, nil
		}
		if f != nil {
			defer f.Close()
		}
		return true, os.RemoveAll(dir)
	}
	if f == nil {
		if !ok { // held: the attempt runs
			return false, nil
		}
		// No lock file: left by a kino from before the locks.
		fi, err := os.Stat(dir)
		if err != nil || time.Since(fi.ModTime()) < legacyAge {
			return false, nil
		}
		return true, os.RemoveAll(dir)
	}
	defer f.Close()
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("scratch sweep: %w", err)
	}
	_ = os.Remove(f.Name())
	return true, nil
}

// tryLock opens and locks the lock file p without waiting: (f, true) when
// taken, (nil, false) when another holds it, (nil, true) when there is no
// such file.
func tryLock(p string) (*os.File, bool) {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return nil, errors.Is(err, fs.ErrNotExist)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// sweepLoop sweeps now and every sweepEvery until ctx ends.
func (s *scratch) sweepLoop(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		if removed, err := s.sweep(); err != nil {
			log.Warn("sweep work directories", "err", err)
		} else if len(removed) > 0 {
			log.Info("removed work directories of attempts no longer running", "dirs", removed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
