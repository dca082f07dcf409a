// Package mediatest is the conformance suite every media backend runs
// (hallgren/eventsourcing's testsuite style): Run takes a constructor and
// checks the behaviour kino's users rely on, the same for each backend.
package mediatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/media"
)

// Store is what the suite uses of a backend: everything kino's users
// (httpapi, the transcoder, kino serve's sweep) call.
type Store interface {
	Incoming() (*os.File, error)
	Commit(ctx context.Context, tmpPath, id, ext string) error
	Open(ctx context.Context, id, rel string) (*media.File, error)
	Fetch(ctx context.Context, id, ext, dst string) error
	WorkDir(ctx context.Context, id, ext string, owner *media.Owner) (string, error)
	Publish(ctx context.Context, id, workDir string) error
	PublishFiles(ctx context.Context, id, dir string, rels []string) error
	RemoveOutputs(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
	Sweep(ctx context.Context, live func(id string) (bool, error)) ([]string, error)
}

// Run runs the suite on stores made by open (a fresh, empty one per call).
func Run(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()
	t.Run("commit, fetch and open the original", func(t *testing.T) {
		s := open(t)
		data := payload(300 << 10)
		id := commit(t, s, data)
		dst := filepath.Join(t.TempDir(), "in.mp4")
		if err := s.Fetch(ctx, id, ".mp4", dst); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, data) {
			t.Fatalf("fetched %d bytes, not the %d uploaded", len(got), len(data))
		}
		if err := s.Fetch(ctx, id, ".mkv", filepath.Join(t.TempDir(), "x")); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("fetch of a missing original: %v, want NotFound", err)
		}
		if err := s.Fetch(ctx, ulid.Make().String(), ".mp4", filepath.Join(t.TempDir(), "x")); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("fetch of an unknown video: %v, want NotFound", err)
		}
	})

	t.Run("open seeks, and serves single and multiple ranges", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		seg := payload(3*128<<10 + 777) // several object-store chunks and a bit
		publish(t, s, id, map[string][]byte{"hls/720p/seg_00000.ts": seg})
		before := time.Now().Add(-time.Minute)
		f, err := s.Open(ctx, id, "hls/720p/seg_00000.ts")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if f.Size != int64(len(seg)) || f.ModTime.Before(before) || f.ModTime.After(time.Now().Add(time.Minute)) || f.ETag == "" {
			t.Fatalf("size %d modtime %v etag %q; want %d, now, an etag", f.Size, f.ModTime, f.ETag, len(seg))
		}
		for _, off := range []int64{0, 5, 128<<10 - 1, 128 << 10, 3 * 128 << 10, 1000, int64(len(seg)) - 3, 200 << 10} {
			if _, err := f.Seek(off, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 70<<10)
			n, err := io.ReadFull(f, buf)
			if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("read at %d: %v", off, err)
			}
			if want := seg[off:min(off+int64(len(buf)), int64(len(seg)))]; !bytes.Equal(buf[:n], want) {
				t.Fatalf("read at %d: %d bytes differ from the file's", off, n)
			}
		}
		if end, _ := f.Seek(0, io.SeekEnd); end != int64(len(seg)) {
			t.Fatalf("seek to end at %d", end)
		}
		rec := serve(t, f, "bytes=10-19")
		if rec.Code != http.StatusPartialContent || !bytes.Equal(rec.Body.Bytes(), seg[10:20]) {
			t.Fatalf("single range: %d %q", rec.Code, rec.Body.Bytes())
		}
		rec = serve(t, f, fmt.Sprintf("bytes=0-1,%d-%d", 300<<10, 300<<10+9))
		parts := multiparts(t, rec)
		if rec.Code != http.StatusPartialContent || len(parts) != 2 || !bytes.Equal(parts[0], seg[:2]) || !bytes.Equal(parts[1], seg[300<<10:300<<10+10]) {
			t.Fatalf("multiple ranges: %d, %d parts", rec.Code, len(parts))
		}
		rec = serve(t, f, "")
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), seg) {
			t.Fatalf("whole file: %d, %d bytes", rec.Code, rec.Body.Len())
		}
	})

	t.Run("publish replaces the outputs of an earlier attempt", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		publish(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("one"), "hls/720p/index.m3u8": []byte("720")})
		first, err := s.Open(ctx, id, "hls/master.m3u8")
		if err != nil {
			t.Fatal(err)
		}
		first.Close()
		publish(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("two"), "hls/360p/index.m3u8": []byte("360")})
		if got := read(t, s, id, "hls/master.m3u8"); got != "two" {
			t.Fatalf("master is %q, want the new one", got)
		}
		if got := read(t, s, id, "hls/360p/index.m3u8"); got != "360" {
			t.Fatalf("new rendition: %q", got)
		}
		missing(t, s, id, "hls/720p/index.m3u8")
		second, err := s.Open(ctx, id, "hls/master.m3u8")
		if err != nil {
			t.Fatal(err)
		}
		second.Close()
		if first.ETag == second.ETag {
			t.Fatalf("etag %s kept across different contents", first.ETag)
		}
		if err := s.RemoveOutputs(ctx, id); err != nil {
			t.Fatal(err)
		}
		missing(t, s, id, "hls/master.m3u8", "thumbnail.jpg", "preview.mp4", "hls/360p/index.m3u8")
		if err := s.Fetch(ctx, id, ".mp4", filepath.Join(t.TempDir(), "in")); err != nil {
			t.Fatalf("original gone with the outputs: %v", err)
		}
	})

	t.Run("optional outputs are published when made, and removed when a later attempt makes none", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		publish(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("one"), media.StoryboardImageName: []byte("sprite"),
			media.StoryboardVTTName: []byte("WEBVTT\n"), media.DownloadName: []byte("mp4")})
		for rel, want := range map[string]string{media.StoryboardImageName: "sprite", media.StoryboardVTTName: "WEBVTT\n", media.DownloadName: "mp4"} {
			if got := read(t, s, id, rel); got != want {
				t.Fatalf("%s is %q, want %q", rel, got, want)
			}
		}
		publish(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("two"), media.StoryboardImageName: []byte("sprite2"),
			media.StoryboardVTTName: []byte("WEBVTT\n\n")})
		if got := read(t, s, id, media.StoryboardImageName); got != "sprite2" {
			t.Fatalf("sprite is %q after the second attempt", got)
		}
		missing(t, s, id, media.DownloadName)
		if err := s.RemoveOutputs(ctx, id); err != nil {
			t.Fatal(err)
		}
		missing(t, s, id, media.StoryboardImageName, media.StoryboardVTTName)
	})

	t.Run("the stills are replaced one by one, the rest kept", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		publish(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("one")})
		work := workDir(t, s, id, map[string][]byte{media.ThumbnailName: []byte("new jpg"), media.AnimatedName: []byte("webp")})
		if err := s.PublishFiles(ctx, id, work, []string{media.ThumbnailName, media.AnimatedName}); err != nil {
			t.Fatal(err)
		}
		for rel, want := range map[string]string{media.ThumbnailName: "new jpg", media.AnimatedName: "webp", "hls/master.m3u8": "one", "preview.mp4": "mp4"} {
			if got := read(t, s, id, rel); got != want {
				t.Fatalf("%s is %q, want %q", rel, got, want)
			}
		}
		if err := s.PublishFiles(ctx, id, work, []string{"original.mp4"}); err == nil {
			t.Fatal("PublishFiles replaced the original")
		}
		if err := s.RemoveOutputs(ctx, id); err != nil {
			t.Fatal(err)
		}
		missing(t, s, id, media.ThumbnailName, media.AnimatedName)
	})

	t.Run("publish after a delete fails and leaves nothing", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		work := workDir(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("m")})
		if err := s.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := s.Publish(ctx, id, work); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("publish after delete: %v, want NotFound", err)
		}
		missing(t, s, id, "hls/master.m3u8", "thumbnail.jpg")
		if _, err := s.WorkDir(ctx, id, ".mp4", nil); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("work dir of a deleted video: %v, want NotFound", err)
		}
	})

	t.Run("publish refuses links and special files", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, plant := range []func(p string) error{
			func(p string) error { return os.Symlink(secret, p) },
			func(p string) error { return os.Link(secret, p) },
		} {
			work := workDir(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("m"), "hls/720p/index.m3u8": []byte("i")})
			if err := plant(filepath.Join(work, "hls", "720p", "seg_00000.ts")); err != nil {
				t.Fatal(err)
			}
			if err := s.Publish(ctx, id, work); err == nil {
				t.Fatal("published a link")
			}
			missing(t, s, id, "hls/720p/seg_00000.ts")
		}
	})

	t.Run("remove deletes everything, twice is fine", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		publish(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("m")})
		for range 2 {
			if err := s.Remove(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		missing(t, s, id, "hls/master.m3u8", "thumbnail.jpg", "preview.mp4")
		if err := s.Fetch(ctx, id, ".mp4", filepath.Join(t.TempDir(), "in")); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("original after remove: %v", err)
		}
	})

	t.Run("sweep removes what no live video owns", func(t *testing.T) {
		s := open(t)
		keep, orphan := commit(t, s, []byte("keep")), commit(t, s, []byte("orphan"))
		publish(t, s, orphan, map[string][]byte{"hls/master.m3u8": []byte("m")})
		inflight, err := s.Incoming()
		if err != nil {
			t.Fatal(err)
		}
		inflight.Close()
		removed, err := s.Sweep(ctx, func(id string) (bool, error) { return id == keep, nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(removed) < 2 {
			t.Fatalf("removed %v, want the upload in flight and %s", removed, orphan)
		}
		if _, err := os.Stat(inflight.Name()); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("upload in flight still there: %v", err)
		}
		missing(t, s, orphan, "hls/master.m3u8", "thumbnail.jpg")
		if err := s.Fetch(ctx, orphan, ".mp4", filepath.Join(t.TempDir(), "o")); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("orphan's original: %v", err)
		}
		if err := s.Fetch(ctx, keep, ".mp4", filepath.Join(t.TempDir(), "k")); err != nil {
			t.Fatalf("live video's original: %v", err)
		}
	})

	t.Run("invalid ids and paths are refused", func(t *testing.T) {
		s := open(t)
		id := commit(t, s, []byte("orig"))
		for _, bad := range []string{"", "..", "../" + id, id + "/..", strings.ToLower(id)} {
			if err := s.Remove(ctx, bad); err == nil {
				t.Errorf("remove %q accepted", bad)
			}
			if err := s.Fetch(ctx, bad, ".mp4", filepath.Join(t.TempDir(), "x")); err == nil {
				t.Errorf("fetch %q accepted", bad)
			}
			if _, err := s.Open(ctx, bad, "thumbnail.jpg"); err == nil {
				t.Errorf("open %q accepted", bad)
			}
			if err := s.Publish(ctx, bad, t.TempDir()); err == nil {
				t.Errorf("publish %q accepted", bad)
			}
		}
		for _, ext := range []string{"mp4", "./../x", ".a/b"} {
			f, err := s.Incoming()
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := s.Commit(ctx, f.Name(), ulid.Make().String(), ext); err == nil {
				t.Errorf("commit with extension %q accepted", ext)
			}
		}
		for _, rel := range []string{"../" + id + "/original.mp4", "/etc/passwd", "", "hls/../original.mp4"} {
			if _, err := s.Open(ctx, id, rel); !domain.IsKind(err, domain.NotFound) {
				t.Errorf("open %q: %v, want NotFound", rel, err)
			}
		}
	})

	runEarly(t, open)

	t.Run("publish racing remove leaves nothing", func(t *testing.T) {
		s := open(t)
		for range 100 {
			id := commit(t, s, []byte("orig"))
			work := workDir(t, s, id, map[string][]byte{"hls/master.m3u8": []byte("m"), "hls/720p/index.m3u8": []byte("i")})
			var wg sync.WaitGroup
			var perr, rerr error
			wg.Add(2)
			go func() { defer wg.Done(); perr = s.Publish(ctx, id, work) }()
			go func() { defer wg.Done(); rerr = s.Remove(ctx, id) }()
			wg.Wait()
			if rerr != nil {
				t.Fatal(rerr)
			}
			if perr != nil && !domain.IsKind(perr, domain.NotFound) {
				t.Fatalf("publish: %v", perr)
			}
			missing(t, s, id, "hls/master.m3u8", "hls/720p/index.m3u8", "thumbnail.jpg", "preview.mp4")
		}
	})
}

func payload(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func commit(t *testing.T, s Store, data []byte) string {
	t.Helper()
	f, err := s.Incoming()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	if err := s.Commit(context.Background(), f.Name(), id, ".mp4"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the upload's temporary file stays after commit: %v", err)
	}
	return id
}

// workDir makes an attempt's work directory holding files, and a
// thumbnail and preview unless files has them.
func workDir(t *testing.T, s Store, id string, files map[string][]byte) string {
	t.Helper()
	work, err := s.WorkDir(context.Background(), id, ".mp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Remove(filepath.Join(work, media.InputName(".mp4"))); err != nil {
		t.Fatal(err)
	}
	all := map[string][]byte{"thumbnail.jpg": []byte("jpg"), "preview.mp4": []byte("mp4")}
	for k, v := range files {
		all[k] = v
	}
	for rel, data := range all {
		p := filepath.Join(work, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

func publish(t *testing.T, s Store, id string, files map[string][]byte) {
	t.Helper()
	if err := s.Publish(context.Background(), id, workDir(t, s, id, files)); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s Store, id, rel string) string {
	t.Helper()
	f, err := s.Open(context.Background(), id, rel)
	if err != nil {
		t.Fatalf("open %s: %v", rel, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func missing(t *testing.T, s Store, id string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		f, err := s.Open(context.Background(), id, rel)
		if err == nil {
			f.Close()
			t.Fatalf("%s of %s is still there", rel, id)
		}
		if !domain.IsKind(err, domain.NotFound) || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open %s: %v, want NotFound wrapping fs.ErrNotExist", rel, err)
		}
	}
}

func serve(t *testing.T, f *media.File, rng string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/x.ts", nil)
	if rng != "" {
		r.Header.Set("Range", rng)
	}
	w := httptest.NewRecorder()
	http.ServeContent(w, r, "", f.ModTime, f)
	return w
}

func multiparts(t *testing.T, rec *httptest.ResponseRecorder) [][]byte {
	t.Helper()
	_, params, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(rec.Body, params["boundary"])
	var parts [][]byte
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		parts = append(parts, b)
	}
}

// NewVideo commits a small original as a new video in s and publishes
// files (slash-separated names) as its outputs; it returns the video's id.
func NewVideo(t *testing.T, s Store, files map[string][]byte) string {
	t.Helper()
	id := commit(t, s, payload(64))
	publish(t, s, id, files)
	return id
}
