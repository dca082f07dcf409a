package media_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/transport/media"
)

func TestCommitRemoveAndSweep(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, err := media.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	commit := func() string {
		t.Helper()
		id := ulid.Make().String()
		if err := s.Commit(ctx, incoming(t, s, []byte("data")), id, ".mp4"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, id, "original.mp4")); err != nil {
			t.Fatalf("not stored at <root>/<id>/original.mp4: %v", err)
		}
		return id
	}
	keep, orphan := commit(), commit()
	inflight, err := s.Incoming()
	if err != nil {
		t.Fatal(err)
	}
	inflight.Close()

	removed, err := s.Sweep(ctx, func(id string) (bool, error) { return id == keep, nil })
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
	if err := s.Remove(ctx, keep); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, keep)); !os.IsNotExist(err) {
		t.Fatal("removed video still on disk")
	}
}

func TestRejectsIDsThatAreNotULIDs(t *testing.T) {
	t.Parallel()
	s, err := media.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "..", "../etc", "a/b", "01ARZ3NDEKTSV4RRFFQ69G5FA", "01arz3ndektsv4rrffq69g5fav"} {
		if _, err := s.Dir(id); err == nil {
			t.Errorf("Dir(%q) accepted", id)
		}
		if err := s.Remove(ctx, id); err == nil {
			t.Errorf("Remove(%q) accepted", id)
		}
	}
}

// Publish serves only what ffmpeg wrote: a symlink or hard link left among
// the outputs (by a compromised ffmpeg, or any process of its user) would
// make kino serve a file that user cannot read (a NATS seed, another
// video's original) on /cdn. Such outputs are refused and nothing is
// published; clean outputs are published as kino's own files.
func TestPublishRefusesLinksAmongOutputs(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "admin.nk")
	if err := os.WriteFile(secret, []byte("SUAM-seed"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(dst string) error{
		"symlinked segment": func(dst string) error { return os.Symlink(secret, dst) },
		"hard-linked segment": func(dst string) error {
			other := filepath.Join(filepath.Dir(dst), "..", "elsewhere")
			if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
				return err
			}
			return os.Link(other, dst)
		},
		"symlinked rendition directory": func(dst string) error {
			return os.Symlink(filepath.Dir(secret), filepath.Join(filepath.Dir(dst), "..", "720p"))
		},
		"fifo": func(dst string) error { return syscall.Mkfifo(dst, 0o644) },
	}
	for name, plantFn := range plant {
		t.Run(name, func(t *testing.T) {
			s, id, work := publishable(t)
			if err := plantFn(filepath.Join(work, media.HLSDir, "240p", "seg_09999.ts")); err != nil {
				t.Fatal(err)
			}
			if err := s.Publish(ctx, id, work); err == nil {
				t.Fatal("published outputs holding a link")
			}
			dir, _ := s.Dir(id)
			if _, err := os.Lstat(filepath.Join(dir, media.HLSDir)); !os.IsNotExist(err) {
				t.Fatalf("hls/ published: %v", err)
			}
		})
	}
	t.Run("clean outputs", func(t *testing.T) {
		s, id, work := publishable(t)
		if err := s.Publish(ctx, id, work); err != nil {
			t.Fatal(err)
		}
		dir, _ := s.Dir(id)
		fi, err := os.Lstat(filepath.Join(dir, media.HLSDir, "240p", "seg_00000.ts"))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			t.Fatalf("published segment: %v %v", fi, err)
		}
	})
}

// publishable is a media store with one video and a finished work
// directory for it: a master playlist, one rendition, thumbnail, preview.
func publishable(t *testing.T) (*media.Dir, string, string) {
	t.Helper()
	s, err := media.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Incoming()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	id := ulid.Make().String()
	if err := s.Commit(ctx, f.Name(), id, ".mp4"); err != nil {
		t.Fatal(err)
	}
	work, err := s.WorkDir(ctx, id, ".mp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		filepath.Join(media.HLSDir, media.MasterName):       "#EXTM3U\n",
		filepath.Join(media.HLSDir, "240p", "index.m3u8"):   "#EXTM3U\n",
		filepath.Join(media.HLSDir, "240p", "seg_00000.ts"): "G",
		media.ThumbnailName: "jpeg",
		media.PreviewName:   "mp4",
	} {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return s, id, work
}

var ctx = context.Background()

// A commit that fails (here: the video's directory exists already) leaves
// the upload's file where it was, the caller's.
func TestStoreCommitFailureKeepsTheFile(t *testing.T) {
	t.Parallel()
	s, err := media.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	dir, err := s.Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := incoming(t, s, []byte("data"))
	if err := s.Commit(ctx, f, id, ".mp4"); err == nil {
		t.Fatal("commit into an existing directory succeeded")
	}
	if got, err := os.ReadFile(f); err != nil || string(got) != "data" {
		t.Fatalf("the upload's file after a failed commit: %q, %v", got, err)
	}
}
