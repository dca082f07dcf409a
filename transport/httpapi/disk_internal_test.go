package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/media"
)

// smallDisk mounts a tmpfs with options (size=…, nr_inodes=…) on a temp
// dir (tests run as root), or skips the test where that is not permitted.
func smallDisk(t *testing.T, options string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", options, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// mediaOn puts the API's media directory on dir.
func mediaOn(t *testing.T, dir string) func(*Config) {
	return func(c *Config) {
		ms, err := media.OpenDir(filepath.Join(dir, "media"))
		if err != nil {
			t.Fatal(err)
		}
		c.Media = ms
		c.Uploads.TusDir = filepath.Join(dir, "media", ".tus") // on the media's file system
	}
}

// fillBytes writes a file of about n bytes on dir (or until the disk is
// full, n < 0) and returns its name.
func fillBytes(t *testing.T, dir string, n int64) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for written := int64(0); n < 0 || written < n; written += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			if n >= 0 {
				t.Fatal(err)
			}
			break
		}
	}
	return f.Name()
}

// fillInodes creates empty files on dir until no more can be made.
func fillInodes(t *testing.T, dir string) {
	t.Helper()
	for i := 0; ; i++ {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("inode-%d", i)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
		f.Close()
	}
}

// A full disk during an upload is the server's fault, not the client's
// (400), and its message must not show a server path: 507, a message
// naming no path, and no partial file left behind, wherever the disk runs
// out (the file's bytes, or the file itself: a disk out of inodes, too, is
// a 507, not a 500).
func TestUploadOnFullDiskIs507WithoutAPath(t *testing.T) {
	tests := []struct {
		name  string
		mount string
		fill  func(t *testing.T, dir string)
	}{
		{"no room for the file's bytes", "size=2m", func(t *testing.T, dir string) { fillBytes(t, dir, -1) }},
		{"no room for the file", "size=8m,nr_inodes=64", fillInodes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			disk := smallDisk(t, tt.mount)
			a := newTestAPI(t, mediaOn(t, disk))
			a.dir = filepath.Join(disk, "media")
			key := a.account("acme", domain.PlanFree)
			tt.fill(t, disk)
			r := a.upload(key, "clip.mp4", video(900<<10))
			m := wantError(t, r, 507, "Insufficient storage")
			if msg := m["message"].(string); strings.Contains(msg, "/") || strings.Contains(msg, disk) {
				t.Fatalf("message names a path: %q", msg)
			}
			if in := a.incoming(); len(in) != 0 {
				t.Fatalf("partial upload left: %v", in)
			}
		})
	}
}

// What an upload's failures tell the client: the server's own disk
// failing is 507 (full) or a 500 (anything else, logged), a broken body
// is 400; no message carries the error's text (a write error other than
// ENOSPC must not answer 400 "upload interrupted: write /srv/…").
func TestUploadFailureMessages(t *testing.T) {
	path := "/srv/kino/media/.incoming/upload-1.part"
	tests := []struct {
		name   string
		err    error
		status int
	}{
		{"disk full", &storeError{&os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}}, 507},
		{"quota exceeded", &storeError{&os.PathError{Op: "write", Path: path, Err: syscall.EDQUOT}}, 507},
		{"inside the reserve", diskspace.ErrNoRoom, 507},
		{"disk error", &storeError{&os.PathError{Op: "write", Path: path, Err: syscall.EIO}}, 500},
		{"body cut short", io.ErrUnexpectedEOF, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			var err error
			var serr *storeError
			if errors.As(tt.err, &serr) || errors.Is(tt.err, diskspace.ErrNoRoom) {
				err = storeFailure(w, tt.err)
			} else {
				err = (&idleBody{}).bodyError(w, tt.err)
			}
			respond.Error(w, quiet, err)
			if w.Code != tt.status || strings.Contains(w.Body.String(), "/srv") || strings.Contains(w.Body.String(), "EOF") {
				t.Fatalf("%d %s, want %d without the error's text", w.Code, w.Body.String(), tt.status)
			}
		})
	}
}

// chunkedUpload posts an upload without Content-Length (chunked).
func (a *testAPI) chunkedUpload(key string, file []byte) response {
	a.t.Helper()
	body, ct := uploadBody("clip.mp4", file)
	req, err := http.NewRequest("POST", a.srv.URL+"/v1/videos", io.MultiReader(body)) // no length known
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	return a.request(req, key)
}

// readyz reads /readyz.
func (a *testAPI) readyz() (status int, failing []string, checks map[string]string) {
	a.t.Helper()
	r := a.do("GET", "/readyz", "", "")
	var body struct {
		Status  string            `json:"status"`
		Failing []string          `json:"failing"`
		Checks  map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		a.t.Fatalf("readyz: %v: %s", err, r.body)
	}
	if (r.status == 200) != (body.Status == "ready") {
		a.t.Fatalf("readyz %d with status %q", r.status, body.Status)
	}
	return r.status, body.Failing, body.Checks
}

// reservedAPI is an API whose media live on an 8 MiB tmpfs, disk, with a
// reserve of 4 MiB, and the key of a free account of it.
func reservedAPI(t *testing.T) (a *testAPI, disk, key string) {
	t.Helper()
	disk = smallDisk(t, "size=8m")
	a = newTestAPI(t, mediaOn(t, disk), func(c *Config) {
		c.Uploads.DiskDirs = []string{disk}
		c.Uploads.DiskReserve = diskspace.Reserve{Bytes: 4 << 20}
	})
	a.dir = filepath.Join(disk, "media")
	return a, disk, a.account("acme", domain.PlanFree)
}

// The disk reserve: uploads that would eat into it are refused with 507
// (before the body is read when its length is announced, while it streams
// otherwise), so the event store never runs dry; /readyz reports a disk
// inside its reserve. Without a reserve (main) each of these uploads was
// stored, until the disk, and the event store with it, was full.
func TestDiskReserveRefusesUploadsWith507(t *testing.T) {
	a, disk, key := reservedAPI(t)
	if r := a.upload(key, "a.mp4", video(900<<10)); r.status != 202 {
		t.Fatalf("upload with room: %d %s", r.status, r.body)
	}
	if st, failing, _ := a.readyz(); st != 200 {
		t.Fatalf("readyz with room: %d %v", st, failing)
	}
	// Leave about 512 KiB above the reserve.
	room, err := a.s.disk.Room()
	if err != nil {
		t.Fatal(err)
	}
	filler := fillBytes(t, disk, room-512<<10)

	r := a.upload(key, "b.mp4", video(900<<10))
	if m := wantError(t, r, 507, "Insufficient storage"); !strings.Contains(m["message"].(string), "does not fit") || !r.close {
		t.Fatalf("announced upload larger than the room: %v %s", r.header, r.body)
	}
	wantError(t, a.chunkedUpload(key, video(900<<10)), 507, "Insufficient storage")
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("refused upload left its partial file: %v", in)
	}
	if r := a.upload(key, "c.mp4", video(100<<10)); r.status != 202 {
		t.Fatalf("upload that fits: %d %s", r.status, r.body)
	}

	// Inside the reserve: every upload is refused and the node is not ready.
	fillBytes(t, disk, 1<<20)
	wantError(t, a.upload(key, "d.mp4", video(1000)), 507, "Insufficient storage")
	if st, failing, _ := a.readyz(); st != 503 || strings.Join(failing, ",") != "disk" {
		t.Fatalf("readyz inside the reserve: %d %v", st, failing)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if st, failing, _ := a.readyz(); st != 200 {
		t.Fatalf("readyz once space is freed: %d %v", st, failing)
	}
}

// Uploads in flight claim the room they announced: one announced while
// another is still streaming finds only what that one has not claimed
// (each used to find the whole room, and together they wrote into the
// reserve). What a finished upload claimed is on the disk; what a failed
// one claimed is given back.
func TestDiskReserveCountsUploadsInFlight(t *testing.T) {
	a, disk, key := reservedAPI(t)
	room, err := a.s.disk.Room()
	if err != nil {
		t.Fatal(err)
	}
	fillBytes(t, disk, room-1<<20) // 1 MiB above the reserve

	// The first upload announces 768 KiB and sends a part of it.
	body, ct := uploadBody("first.mp4", video(768<<10))
	pr, pw := io.Pipe()
	req, err := http.NewRequest("POST", a.srv.URL+"/v1/videos", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(body.Len())
	req.Header.Set("Content-Type", ct)
	first := make(chan response, 1)
	go func() { first <- a.request(req, key) }()
	head := body.Next(128 << 10)
	if _, err := pw.Write(head); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if free, err := a.s.disk.Unclaimed(); err == nil && free < 512<<10 {
			break // the first upload's claim is on the ledger
		}
		if time.Now().After(deadline) {
			t.Fatal("the first upload claimed no room")
		}
	}
	r := a.upload(key, "second.mp4", video(512<<10))
	if m := wantError(t, r, 507, "Insufficient storage"); !strings.Contains(m["message"].(string), "does not fit") {
		t.Fatalf("an upload announced beside one in flight: %s", r.body)
	}
	if _, err := pw.Write(body.Bytes()); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	if r := <-first; r.status != 202 {
		t.Fatalf("the first upload: %d %s", r.status, r.body)
	}
	if free, err := a.s.disk.Unclaimed(); err != nil || free > 512<<10 {
		t.Fatalf("room after the first upload: %d %v, want under 512 KiB (its file is on the disk)", free, err)
	}
	if r := a.upload(key, "third.mp4", video(100<<10)); r.status != 202 {
		t.Fatalf("an upload that fits what is left: %d %s", r.status, r.body)
	}
}

// /readyz names each check and the failing ones: here the media directory
// gone, and read models further behind the stream than allowed.
func TestReadyzNamesFailingChecks(t *testing.T) {
	a := newTestAPI(t)
	a.account("acme", domain.PlanFree)
	st, failing, checks := a.readyz()
	if st != 200 || len(failing) != 0 {
		t.Fatalf("readyz: %d %v", st, failing)
	}
	for _, name := range []string{"nats", "jetstream", "read_models", "media", "disk"} {
		if checks[name] != "ok" {
			t.Fatalf("check %s: %q in %v", name, checks[name], checks)
		}
	}
	if err := os.RemoveAll(a.dir); err != nil {
		t.Fatal(err)
	}
	if st, failing, checks := a.readyz(); st != 503 || strings.Join(failing, ",") != "media" || strings.Contains(checks["media"], "/") {
		t.Fatalf("readyz without the media directory: %d %v %v", st, failing, checks)
	}
	if r := a.do("GET", "/healthz", "", ""); r.status != 200 {
		t.Fatalf("healthz (liveness) without media: %d", r.status)
	}

	// A projector that does not follow: the read models fall behind.
	b := newTestAPI(t, func(c *Config) {
		p, err := projections.NewProjector(c.DB, c.Store.(*eventstore.Store), quiet)
		if err != nil {
			t.Fatal(err)
		}
		c.Projector, c.MaxReadLag, c.SettleTimeout = p, 1, time.Millisecond
	})
	b.account("acme", domain.PlanFree)
	if st, failing, checks := b.readyz(); st != 503 || strings.Join(failing, ",") != "read_models" || !strings.Contains(checks["read_models"], "behind") {
		t.Fatalf("readyz with lagging read models: %d %v %v", st, failing, checks)
	}
}

// With the object store, an upload is copied into the bucket once it is
// in: it needs its size in room a second time (the embedded NATS keeps
// the bucket on the same disk). One that fits the streaming check but not
// its copy gets 507, and leaves nothing behind.
func TestObjectStoreUploadNeedsRoomForItsCopy(t *testing.T) {
	disk := smallDisk(t, "size=8m")
	a := newTestAPI(t, func(c *Config) {
		obj, err := objects.Open(context.Background(), c.Store.(*eventstore.Store))
		if err != nil {
			t.Fatal(err)
		}
		m, err := media.OpenBucket(obj, filepath.Join(disk, "media"), 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Media, c.Uploads.DiskDirs, c.Uploads.DiskReserve = m, []string{disk}, diskspace.Reserve{Bytes: 2 << 20}
	})
	a.dir = filepath.Join(disk, "media")
	a.s.disk.Every = 64 << 10
	key := a.account("acme", domain.PlanFree)
	room, err := a.s.disk.Room()
	if err != nil {
		t.Fatal(err)
	}
	fillBytes(t, disk, room-1280<<10) // 1.25 MiB above the reserve
	wantError(t, a.upload(key, "a.mp4", video(900<<10)), 507, "Insufficient storage")
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("refused upload left its file: %v", in)
	}
	if r := a.upload(key, "b.mp4", video(300<<10)); r.status != 202 {
		t.Fatalf("upload whose copy fits: %d %s", r.status, r.body)
	}
}
