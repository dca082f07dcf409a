package transcoder

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// An attempt's staging directory (progressive publishing) is swept with
// its attempt, by its attempt's lock: kept while the attempt runs however
// old it is, removed once the attempt is over or its lock is gone (red
// team: a running attempt's staging directory was removed after an hour,
// a crashed one's kept for an hour).
func TestSweepStagedPlaylists(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, err := openScratch(root, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	running := filepath.Join(root, "01ARZ3NDEKTSV4RRFFQ69G5FAV-0000000000000001")
	lock, err := os.OpenFile(running+lockSuffix, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := lockFile(lock); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(root, "01ARZ3NDEKTSV4RRFFQ69G5FAV-0000000000000002")
	old := time.Now().Add(-2 * time.Hour)
	for _, d := range []string{running, running + stagedSuffix, orphan + stagedSuffix} {
		if err := os.MkdirAll(filepath.Join(d, "hls"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.sweep(); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if !exists(running) || !exists(running+stagedSuffix) {
		t.Fatal("a running attempt's directories were swept")
	}
	if exists(orphan + stagedSuffix) {
		t.Fatal("a staging directory without its attempt was kept")
	}
	lock.Close() // the attempt died
	// A process forked by a test beside this one holds a copy of the lock's
	// descriptor until it execs: the lock is free once that copy closes.
	eventstoretest.Eventually(t, "a dead attempt's directories swept", func() bool {
		if _, err := s.sweep(); err != nil {
			t.Fatal(err)
		}
		return !exists(running) && !exists(running+stagedSuffix)
	})
}
