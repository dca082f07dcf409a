package media_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/transport/media"
)

func TestCommitRemoveAndSweep(t *testing.T) {
	root := t.TempDir()
	s, err := media.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	commit := func() string {
		t.Helper()
		f, err := s.Incoming()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("data"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		id := ulid.Make().String()
		dst, err := s.Commit(f.Name(), id, ".mp4")
		if err != nil {
			t.Fatal(err)
		}
		if dst != filepath.Join(root, id, "original.mp4") {
			t.Fatalf("stored at %s", dst)
		}
		return id
	}
	keep, orphan := commit(), commit()
	inflight, err := s.Incoming()
	if err != nil {
		t.Fatal(err)
	}
	inflight.Close()

	removed, err := s.Sweep(func(id string) (bool, error) { return id == keep, nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Fatalf("removed %v, want the in-flight upload and %s", removed, orphan)
	}
	if _, err := os.Stat(filepath.Join(root, orphan)); !os.IsNotExist(err) {
		t.Fatalf("orphan still there: %v", err)
	}
	if _, err := os.Stat(inflight.Name()); !os.IsNotExist(err) {
		t.Fatalf("in-flight upload still there: %v", err)
	}
	if err := s.Remove(keep); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, keep)); !os.IsNotExist(err) {
		t.Fatal("removed video still on disk")
	}
}

func TestRejectsIDsThatAreNotULIDs(t *testing.T) {
	s, err := media.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "..", "../etc", "a/b", "01ARZ3NDEKTSV4RRFFQ69G5FA", "01arz3ndektsv4rrffq69g5fav"} {
		if _, err := s.Dir(id); err == nil {
			t.Errorf("Dir(%q) accepted", id)
		}
		if err := s.Remove(id); err == nil {
			t.Errorf("Remove(%q) accepted", id)
		}
	}
}
