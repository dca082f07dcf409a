package media

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/domain"
)

// Open serves plain files under a video's directory and nothing a link,
// a FIFO or a directory stands for, whether the kernel resolves the path
// (openat2) or Open walks it step by step (kernels without openat2).
func TestOpenRefusesWhatIsNotAPlainFileUnderTheVideo(t *testing.T) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			d, err := OpenDir(root)
			if err != nil {
				t.Fatal(err)
			}
			d.beneath.absent.Store(walk)
			secret := filepath.Join(t.TempDir(), "serve.nk")
			write(t, secret, "the seed")
			id, linked := ulid.Make().String(), ulid.Make().String()
			dir := filepath.Join(root, id)
			write(t, filepath.Join(dir, "hls", "720p", "seg_00000.m4s"), "a segment")
			write(t, filepath.Join(dir, "thumbnail.jpg"), "a picture")
			elsewhere := filepath.Join(t.TempDir(), "240p")
			write(t, filepath.Join(elsewhere, "seg_00000.m4s"), "the seed")
			links := map[string]string{
				"preview.mp4":            secret,
				"hls/240p":               elsewhere,
				"hls/720p/seg_00001.m4s": secret,
				"hls/720p/seg_00002.m4s": "seg_00000.m4s", // a relative link to a plain file beside it
				"../" + linked:           dir,             // a whole video directory
				"hls/720p/index.m3u8":    "/proc/self/environ",
				"hls/master.m3u8":        "../thumbnail.jpg",
				"hls/720p/init.mp4":      filepath.Join(dir, "thumbnail.jpg"),
				"storyboard.jpg":         "/dev/zero",
				"hls/audio":              "720p",
				"hls/720p/seg_00003.m4s": "../../../" + id + "/thumbnail.jpg",
				"hls/720p/seg_00004.m4s": "/",
				"hls/720p/seg_00005.m4s": ".",
				"hls/720p/seg_00006.m4s": "..",
				"hls/720p/seg_00007.m4s": "missing",
				"hls/720p/seg_00008.m4s": root,
				"hls/720p/seg_00009.m4s": filepath.Join(root, ".incoming"),
			}
			for link, target := range links {
				if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
					t.Fatal(err)
				}
			}
			if err := syscall.Mkfifo(filepath.Join(dir, "preview.webp"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "download.mp4"), 0o755); err != nil {
				t.Fatal(err)
			}
			short, err := os.MkdirTemp("", "sock") // a socket's path is at most 107 bytes
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(short)
			sock, err := net.Listen("unix", filepath.Join(short, "s"))
			if err != nil {
				t.Fatal(err)
			}
			defer sock.Close()
			if err := os.Rename(filepath.Join(short, "s"), filepath.Join(dir, "storyboard.vtt")); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, ok := range []struct{ id, rel, want string }{
				{id, "hls/720p/seg_00000.m4s", "a segment"},
				{id, "thumbnail.jpg", "a picture"},
			} {
				f, err := d.Open(ctx, ok.id, ok.rel)
				if err != nil {
					t.Fatalf("%s: %v", ok.rel, err)
				}
				b, err := io.ReadAll(f)
				f.Close()
				if err != nil || string(b) != ok.want || f.Size != int64(len(ok.want)) || f.ETag == "" {
					t.Fatalf("%s: %q (size %d, etag %q), %v", ok.rel, b, f.Size, f.ETag, err)
				}
			}
			refused := []struct{ id, rel string }{
				{linked, "thumbnail.jpg"}, {id, "hls/240p/seg_00000.m4s"}, {id, "hls/audio/seg_00000.m4s"},
				{id, "preview.webp"}, {id, "download.mp4"}, {id, "storyboard.vtt"}, {id, "hls"}, {id, "missing.jpg"},
				{id, "../" + id + "/thumbnail.jpg"}, {id, "/thumbnail.jpg"}, {id, ""},
			}
			for link := range links {
				if link[0] != '.' {
					refused = append(refused, struct{ id, rel string }{id, link})
				}
			}
			for _, r := range refused {
				f, err := d.Open(ctx, r.id, r.rel)
				if err == nil {
					f.Close()
					t.Fatalf("%s/%s was opened", r.id, r.rel)
				}
				if !domain.IsKind(err, domain.NotFound) {
					t.Fatalf("%s/%s: %v, want NotFound", r.id, r.rel, err)
				}
			}
		})
	}
}

// A media directory replaced while kino runs (renamed away and made
// again, or covered by a mount) is served as the path names it once the
// held descriptor is checked again, as the writers that go by the path see
// it, and the old directory's descriptor is closed.
func TestOpenFollowsAReplacedMediaDirectory(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "media")
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	old, fresh := ulid.Make().String(), ulid.Make().String()
	write(t, filepath.Join(root, old, "thumbnail.jpg"), "old")
	ctx := context.Background()
	if f, err := d.Open(ctx, old, "thumbnail.jpg"); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	held := d.beneath.cur.Load()
	if err := os.Rename(root, filepath.Join(parent, "away")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, fresh, "thumbnail.jpg"), "fresh")
	d.beneath.checked.Store(0) // as when rootCheck has passed
	f, err := d.Open(ctx, fresh, "thumbnail.jpg")
	if err != nil {
		t.Fatalf("the file in the new directory: %v", err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "fresh" {
		t.Fatalf("read %q", b)
	}
	if n := held.refs.Load(); n != 0 {
		t.Fatalf("the old directory's descriptor is still held (%d references)", n)
	}
	if f, err := d.Open(ctx, old, "thumbnail.jpg"); err == nil {
		f.Close()
		t.Fatal("a file of the directory renamed away was served")
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Opens running while the media directory is swapped again and again
// (checked on every call) read only files of one of the two directories,
// and leave no descriptor of a directory let go.
func TestOpenWhileTheMediaDirectoryIsSwapped(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "media")
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	write(t, filepath.Join(root, id, "thumbnail.jpg"), "one")
	other := filepath.Join(parent, "other")
	write(t, filepath.Join(other, id, "thumbnail.jpg"), "two")
	fds := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(entries)
	}
	before := fds()
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				d.beneath.checked.Store(0)
				f, err := d.Open(context.Background(), id, "thumbnail.jpg")
				if domain.IsKind(err, domain.NotFound) {
					continue // between the two renames
				}
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(f)
				f.Close()
				if err != nil || (string(b) != "one" && string(b) != "two") {
					errs <- fmt.Errorf("read %q, %v", b, err)
					return
				}
			}
		}()
	}
	swap := filepath.Join(parent, "swap")
	for range 200 {
		for _, mv := range [][2]string{{root, swap}, {other, root}, {swap, other}} {
			if err := os.Rename(mv[0], mv[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	d.beneath.checked.Store(0)
	if f, err := d.Open(context.Background(), id, "thumbnail.jpg"); err == nil {
		f.Close()
	}
	if after := fds(); after > before+2 {
		t.Fatalf("%d descriptors open, %d before", after, before)
	}
}
