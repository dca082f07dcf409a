package mediatest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/kino-video/kino/domain"
)

// runEarly checks PublishFiles: the HLS files of a work directory ffmpeg
// still writes, published one by one before Publish replaces them all.
func runEarly(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	t.Run("files published early are served, replaced, then replaced by publish", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		work := workDir(t, s, id, map[string][]byte{
			"hls/720p/seg_00000.ts": []byte("seg0"), "hls/720p/index.m3u8": []byte("#EXTM3U ffmpeg's"),
			"hls/master.m3u8": []byte("master"),
		})
		staged := t.TempDir()
		write(t, staged, "hls/720p/index.m3u8", "event 1")
		if err := s.PublishFiles(ctx, id, work, []string{"hls/720p/seg_00000.ts"}); err != nil {
			t.Fatal(err)
		}
		if err := s.PublishFiles(ctx, id, staged, []string{"hls/720p/index.m3u8"}); err != nil {
			t.Fatal(err)
		}
		if got := read(t, s, id, "hls/720p/seg_00000.ts"); got != "seg0" {
			t.Fatalf("segment %q", got)
		}
		if got := read(t, s, id, "hls/720p/index.m3u8"); got != "event 1" {
			t.Fatalf("playlist %q, want the staged one", got)
		}
		missing(t, s, id, "hls/master.m3u8", "thumbnail.jpg", "preview.mp4")
		// The next pass: one more segment, the playlist listing it, the master.
		write(t, work, "hls/720p/seg_00001.ts", "seg1")
		write(t, staged, "hls/720p/index.m3u8", "event 2")
		if err := s.PublishFiles(ctx, id, work, []string{"hls/720p/seg_00001.ts", "hls/master.m3u8"}); err != nil {
			t.Fatal(err)
		}
		if err := s.PublishFiles(ctx, id, staged, []string{"hls/720p/index.m3u8"}); err != nil {
			t.Fatal(err)
		}
		if got := read(t, s, id, "hls/720p/index.m3u8") + read(t, s, id, "hls/720p/seg_00001.ts") + read(t, s, id, "hls/master.m3u8"); got != "event 2seg1master" {
			t.Fatalf("after the second pass: %q", got)
		}
		// An extra file published early that the final outputs lack goes.
		write(t, staged, "hls/480p/index.m3u8", "stray")
		if err := s.PublishFiles(ctx, id, staged, []string{"hls/480p/index.m3u8"}); err != nil {
			t.Fatal(err)
		}
		write(t, work, "hls/720p/index.m3u8", "vod")
		if err := s.Publish(ctx, id, work); err != nil {
			t.Fatal(err)
		}
		if got := read(t, s, id, "hls/720p/index.m3u8") + read(t, s, id, "hls/720p/seg_00000.ts") + read(t, s, id, "hls/720p/seg_00001.ts") + read(t, s, id, "thumbnail.jpg"); got != "vodseg0seg1jpg" {
			t.Fatalf("after publish: %q", got)
		}
		missing(t, s, id, "hls/480p/index.m3u8")
		if err := s.RemoveOutputs(ctx, id); err != nil {
			t.Fatal(err)
		}
		missing(t, s, id, "hls/720p/index.m3u8", "hls/720p/seg_00000.ts", "hls/master.m3u8")
	})

	t.Run("publish over files published early never leaves one missing", func(t *testing.T) {
		neverMissing(t, open(t))
	})

	t.Run("publish files refuses links, special files, others' files and paths off hls", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		work := workDir(t, s, id, map[string][]byte{"hls/720p/index.m3u8": []byte("i")})
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		plants := map[string]func(p string) error{
			"symlink":  func(p string) error { return os.Symlink(secret, p) },
			"hardlink": func(p string) error { return os.Link(secret, p) },
			"fifo":     func(p string) error { return syscall.Mkfifo(p, 0o644) },
		}
		if os.Geteuid() == 0 {
			plants["another user's file"] = func(p string) error {
				if err := os.WriteFile(p, []byte("theirs"), 0o644); err != nil {
					return err
				}
				return os.Chown(p, 65534, 65534)
			}
		}
		for what, plant := range plants {
			rel := "hls/720p/seg_" + what + ".ts"
			if err := plant(filepath.Join(work, filepath.FromSlash(rel))); err != nil {
				t.Fatal(err)
			}
			if err := s.PublishFiles(ctx, id, work, []string{rel}); err == nil {
				t.Errorf("published a %s", what)
			}
		}
		// A directory on the way that is a symlink to another directory.
		if err := os.Symlink(filepath.Join(work, "hls", "720p"), filepath.Join(work, "hls", "linked")); err != nil {
			t.Fatal(err)
		}
		if err := s.PublishFiles(ctx, id, work, []string{"hls/linked/index.m3u8"}); err == nil {
			t.Error("published through a symlinked directory")
		}
		for _, rel := range []string{"storyboard.jpg", "hls/../thumbnail.jpg", "../" + id + "/original.mp4", "/etc/passwd", "hls/720p/.hidden", "hls//720p/index.m3u8", "hls"} {
			if err := s.PublishFiles(ctx, id, work, []string{rel}); err == nil {
				t.Errorf("published %q", rel)
			}
		}
		missing(t, s, id, "hls/720p/seg_symlink.ts", "hls/720p/seg_hardlink.ts", "hls/720p/seg_fifo.ts", "hls/linked/index.m3u8", "storyboard.jpg")
	})

	t.Run("publish files after a delete fails and leaves nothing", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		work := workDir(t, s, id, map[string][]byte{"hls/720p/seg_00000.ts": []byte("s")})
		if err := s.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := s.PublishFiles(ctx, id, work, []string{"hls/720p/seg_00000.ts"}); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("publish files after delete: %v, want NotFound", err)
		}
		missing(t, s, id, "hls/720p/seg_00000.ts")
	})

	t.Run("publish files racing remove leaves nothing", func(t *testing.T) {
		s := open(t)
		for range 50 {
			id := commit(t, s, []byte("orig"))
			work := workDir(t, s, id, map[string][]byte{"hls/720p/seg_00000.ts": []byte("s"), "hls/720p/index.m3u8": []byte("i")})
			var wg sync.WaitGroup
			var perr, rerr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				perr = s.PublishFiles(ctx, id, work, []string{"hls/720p/seg_00000.ts", "hls/720p/index.m3u8"})
			}()
			go func() { defer wg.Done(); rerr = s.Remove(ctx, id) }()
			wg.Wait()
			if rerr != nil {
				t.Fatal(rerr)
			}
			if perr != nil && !domain.IsKind(perr, domain.NotFound) {
				t.Fatalf("publish files: %v", perr)
			}
			missing(t, s, id, "hls/720p/seg_00000.ts", "hls/720p/index.m3u8")
		}
	})
}

func write(t *testing.T, dir, rel, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// neverMissing publishes early, then Publishes, while a reader opens the
// playlists all along: none of them may be missing at any moment.
func neverMissing(t *testing.T, s Store) {
	ctx := context.Background()
	for range 20 {
		id := commit(t, s, []byte("orig"))
		files := map[string][]byte{"hls/720p/seg_00000.ts": []byte("s"), "hls/720p/index.m3u8": []byte("i"), "hls/master.m3u8": []byte("m")}
		work := workDir(t, s, id, files)
		if err := s.PublishFiles(ctx, id, work, []string{"hls/720p/seg_00000.ts", "hls/720p/index.m3u8", "hls/master.m3u8"}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var missed error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				for _, rel := range []string{"hls/master.m3u8", "hls/720p/index.m3u8", "hls/720p/seg_00000.ts"} {
					f, err := s.Open(ctx, id, rel)
					if err != nil {
						missed = err
						return
					}
					f.Close()
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		err := s.Publish(ctx, id, work)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if missed != nil {
			t.Fatalf("a file published early went missing while Publish replaced it: %v", missed)
		}
	}
}
