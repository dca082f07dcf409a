package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/tus"
	"github.com/kino-video/kino/transport/tus/tustest"
)

// tusReq sends a tus request: Tus-Resumable is set unless hdr says
// otherwise ("" removes it).
func (a *testAPI) tusReq(method, path, key string, hdr map[string]string, body []byte) response {
	a.t.Helper()
	return fromTus(a.tus().Tus(method, path, key, hdr, body))
}

// tusCreate creates an upload of n bytes of clip.mp4 into main and
// returns its path (the Location).
func (a *testAPI) tusCreate(key string, n int) string {
	a.t.Helper()
	return a.tus().Create(key, n)
}

// tusPatch sends chunk at offset; hdr are more headers, name then value.
func (a *testAPI) tusPatch(path, key string, offset int, chunk []byte, hdr ...string) response {
	a.t.Helper()
	return fromTus(a.tus().Patch(path, key, offset, chunk, hdr...))
}

// tusOffset asks (HEAD) for an upload's offset.
func (a *testAPI) tusOffset(path, key string) (int, response) {
	a.t.Helper()
	n, r := a.tus().Offset(path, key)
	return n, fromTus(r)
}

// tusFiles lists the tus directory.
func (a *testAPI) tusFiles() []string {
	a.t.Helper()
	return tustest.Files(a.t, a.s.cfg.Uploads.TusDir)
}

// wantVideo checks that video id is readable by key, in main.
func (a *testAPI) wantVideo(key, id, filename string) {
	a.t.Helper()
	a.tus().WantVideo(key, id, filename)
}

var (
	tusMeta = tustest.Meta
	clip    = tustest.Clip
)

// tusStart creates an upload of file and sends its first n bytes.
func (a *testAPI) tusStart(key string, file []byte, n int) string {
	a.t.Helper()
	loc := a.tusCreate(key, len(file))
	if r := a.tusPatch(loc, key, 0, file[:n]); r.status != 204 {
		a.t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	return loc
}

// heldPatch opens a connection to the API and sends the head of a PATCH
// of size bytes at offset 0 to the upload at loc: the test writes the
// body, or part of it. The connection is closed when the test ends.
func (a *testAPI) heldPatch(loc, key string, offset, size int) net.Conn {
	a.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "PATCH %s HTTP/1.1\r\nHost: kino\r\nAuthorization: Bearer %s\r\nTus-Resumable: 1.0.0\r\n"+
		"Content-Type: application/offset+octet-stream\r\nUpload-Offset: %d\r\nContent-Length: %d\r\n\r\n", loc, key, offset, size)
	return conn
}

// dripPatch starts a tus upload of a clip of two Blocks, sends all but
// the last 3000 bytes of the first Block as one PATCH, then holds a
// second PATCH open after those 3000 bytes, once the file shows them
// (writes end on a Block). It returns the upload's URL and id, the held
// connection and the clip.
func (a *testAPI) dripPatch(key string) (loc, id string, conn net.Conn, file []byte) {
	a.t.Helper()
	file = clip(2 * diskspace.Block)
	loc = a.tusCreate(key, len(file))
	id = strings.TrimPrefix(loc, "/v1/uploads/tus/")
	start := diskspace.Block - 3000
	if r := a.tusPatch(loc, key, 0, file[:start]); r.status != 204 {
		a.t.Fatalf("PATCH of the first bytes: %d %s", r.status, r.body)
	}
	conn = a.heldPatch(loc, key, start, len(file)-start)
	_, _ = conn.Write(file[start:diskspace.Block])
	eventstoretest.Eventually(a.t, "the held PATCH to write its bytes", func() bool {
		fi, err := os.Stat(a.s.tus.DataPath(id))
		return err == nil && fi.Size() == diskspace.Block
	})
	return loc, id, conn, file
}

// wantOriginal checks that the media directory holds file as video id's
// original.
func (a *testAPI) wantOriginal(id string, file []byte) {
	a.t.Helper()
	got, err := os.ReadFile(filepath.Join(a.dir, id, "original.mp4"))
	if err != nil || !bytes.Equal(got, file) {
		a.t.Fatalf("stored original differs (%v)", err)
	}
}

// A file sent in three chunks becomes the video the upload's URL names,
// with the same record as a multipart upload, and leaves nothing behind.
func TestTusUploadInChunks(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(5000)
	loc := a.tusCreate(key, len(file))
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	if !domain.ValidID(id) {
		t.Fatalf("Location %q does not end in a video id", loc)
	}
	for off, end := range map[int]int{0: 2000} {
		if r := a.tusPatch(loc, key, off, file[off:end]); r.status != 204 || r.header.Get("Upload-Offset") != strconv.Itoa(end) {
			t.Fatalf("PATCH %d: %d %v %s", off, r.status, r.header, r.body)
		}
	}
	off, r := a.tusOffset(loc, key)
	if r.status != 200 || off != 2000 || r.header.Get("Upload-Length") != "5000" || r.header.Get("Cache-Control") != "no-store" ||
		r.header.Get("Upload-Metadata") != tusMeta("filename", "clip.mp4", "collection", "main") {
		t.Fatalf("HEAD: %d %v", r.status, r.header)
	}
	if r := a.do("GET", "/v1/videos/"+id, key, ""); r.status != 404 {
		t.Fatalf("video before its last byte: %d", r.status)
	}
	if r := a.tusPatch(loc, key, 2000, file[2000:4000]); r.status != 204 {
		t.Fatalf("PATCH 2: %d %s", r.status, r.body)
	}
	if r := a.tusPatch(loc, key, 4000, file[4000:]); r.status != 204 || r.header.Get("Upload-Offset") != "5000" {
		t.Fatalf("last PATCH: %d %v %s", r.status, r.header, r.body)
	}
	a.wantVideo(key, id, "clip.mp4")
	a.wantOriginal(id, file)
	if files := a.tusFiles(); len(files) != 1 || files[0] != id+".done" {
		t.Fatalf("finished upload left %v, want its completion record only", files)
	}
}

// uploadTo is a multipart upload into collection slug.
func (a *testAPI) uploadTo(key, slug, filename string, file []byte) response {
	a.t.Helper()
	return fromTus(a.tus().Multipart(key, slug, filename, file))
}

// An upload untouched for Uploads.TusExpiry answers 410 and is removed; the
// sweeper removes those nobody asks about.
func TestTusExpiry(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.TusExpiry = time.Hour })
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	asked := a.tusCreate(key, len(file))
	forgotten := a.tusCreate(key, len(file))
	if r := a.tusPatch(asked, key, 0, file[:1500]); r.status != 204 {
		t.Fatalf("PATCH: %d", r.status)
	}
	start := a.clock.Now()
	// A PATCH moves the expiry on.
	a.clock.Set(start.Add(50 * time.Minute))
	if r := a.tusPatch(asked, key, 1500, file[1500:2000]); r.status != 204 {
		t.Fatalf("PATCH: %d", r.status)
	}
	a.clock.Set(start.Add(70 * time.Minute))
	if off, r := a.tusOffset(asked, key); r.status != 200 || off != 2000 {
		t.Fatalf("HEAD within the expiry of its last PATCH: %d %d", r.status, off)
	}
	if n := a.s.tusUploads.Sweep(); n != 1 {
		t.Fatalf("sweep removed %d uploads, want the forgotten one", n)
	}
	wantStatus(t, a.tusReq("HEAD", forgotten, key, nil, nil), 404)
	a.clock.Set(start.Add(111 * time.Minute))
	wantError(t, a.tusPatch(asked, key, 2000, file[2000:]), 410, "Gone")
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("expired uploads left %v", files)
	}
}

// Unfinished uploads survive a restart of the API: a new Server on the
// same directory serves them, from the offset recorded.
func TestTusSurvivesRestart(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(4000)
	loc := a.tusStart(key, file, 2500)
	// A crash in the middle of a PATCH leaves unrecorded bytes: cut off.
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	f, err := os.OpenFile(filepath.Join(a.s.cfg.Uploads.TusDir, id+".bin"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("garbage never acknowledged"))
	f.Close()
	// And a half-written record of another upload goes.
	if err := os.WriteFile(filepath.Join(a.s.cfg.Uploads.TusDir, "01JZZZZZZZZZZZZZZZZZZZZZZZ.bin"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	a.restart()
	if off, r := a.tusOffset(loc, key); r.status != 200 || off != 2500 {
		t.Fatalf("HEAD after restart: %d offset %d", r.status, off)
	}
	if files := a.tusFiles(); len(files) != 2 {
		t.Fatalf("after restart: %v, want the upload's two files", files)
	}
	if r := a.tusPatch(loc, key, 2500, file[2500:]); r.status != 204 {
		t.Fatalf("PATCH after restart: %d %s", r.status, r.body)
	}
	a.wantVideo(key, id, "clip.mp4")
	a.wantOriginal(id, file)
}

// A new PATCH of an upload takes over from one still in flight (a dead
// connection the server has not noticed), as tusd does: the older one is
// interrupted, what it wrote is kept and recorded, and the new one then
// goes on from there. The offset stays exact.
func TestTusConcurrentPatch(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	other := a.account("other", domain.PlanFree)
	first := diskspace.Block // writes end on a Block: the first bytes show in the file
	file := clip(2 * first)
	loc := a.tusCreate(key, len(file))
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")

	conn := a.heldPatch(loc, key, 0, len(file))
	_, _ = conn.Write(file[:first]) // then nothing: a connection gone dead
	eventstoretest.Eventually(t, "the first PATCH to hold the upload and write its bytes", func() bool {
		fi, err := os.Stat(a.s.tus.DataPath(id))
		return a.tusStore().Busy(id) && err == nil && fi.Size() == int64(first)
	})
	// Another account cannot interrupt it.
	wantError(t, a.tusPatch(loc, other, 0, file), 404, "Not found")
	// The owner's new PATCH, from the offset it last knew: the first is
	// interrupted, its first bytes recorded, and the new one told so.
	wantError(t, a.tusPatch(loc, key, 0, file), 409, "Conflict")
	off, _ := a.tusOffset(loc, key)
	if off != first {
		t.Fatalf("offset after a PATCH was taken over: %d, want the %d bytes received", off, first)
	}
	if r := a.tusPatch(loc, key, off, file[off:]); r.status != 204 {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	a.wantVideo(key, id, "clip.mp4")
	a.wantOriginal(id, file)
}

// The collection is checked again at the last byte, as for a multipart
// upload: deleted meanwhile, the upload is refused and removed.
func TestTusCollectionDeletedBeforeLastByte(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	if r := a.do("POST", "/v1/collections", key, `{"slug":"short","name":"Short"}`); r.status != 201 {
		t.Fatalf("collection: %d", r.status)
	}
	file := clip(3000)
	r := a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "a.mp4", "collection", "short")}, file[:2000])
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	loc := r.header.Get("Location")
	if r := a.do("DELETE", "/v1/collections/short", key, ""); r.status != 200 && r.status != 204 {
		t.Fatalf("delete collection: %d %s", r.status, r.body)
	}
	wantError(t, a.tusPatch(loc, key, 2000, file[2000:]), 404, "Not found")
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("refused upload left %v", files)
	}
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("refused upload left %v", in)
	}
}

func TestDirectUpload(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	a := newTestAPI(t, func(c *Config) {
		c.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	key := a.account("acme", domain.PlanFree)
	a.account("other", domain.PlanFree)

	wantError(t, a.do("POST", "/v1/uploads", key, `{"collection":"nope"}`), 404, "Not found")
	wantError(t, a.do("POST", "/v1/uploads", key, `{"collection":"main","expiresIn":999999}`), 400, "Bad request")
	wantError(t, a.do("POST", "/v1/uploads", "", `{"collection":"main"}`), 401, respond.LabelMissingKey)
	r := a.do("POST", "/v1/uploads", key, `{"collection":"main"}`)
	if r.status != 201 {
		t.Fatalf("POST /v1/uploads: %d %s", r.status, r.body)
	}
	var d struct{ ID, URL, ExpiresAt string }
	if err := json.Unmarshal(r.body, &d); err != nil {
		t.Fatal(err)
	}
	exp, err := time.Parse(time.RFC3339, d.ExpiresAt)
	if !domain.ValidID(d.ID) || err != nil || !exp.Equal(a.clock.Now().Add(time.Hour)) {
		t.Fatalf("direct upload: %s", r.body)
	}
	prefix := a.srv.URL + "/v1/uploads/tus/direct/"
	if !strings.HasPrefix(d.URL, prefix) {
		t.Fatalf("url %q", d.URL)
	}
	token := strings.TrimPrefix(d.URL, prefix)

	// A browser's preflight.
	pre := a.tusReq("OPTIONS", d.URL, "", map[string]string{"Tus-Resumable": "", "Origin": "https://customer.example",
		"Access-Control-Request-Method": "POST"}, nil)
	if pre.status != 204 || pre.header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), "Upload-Metadata") ||
		!strings.Contains(pre.header.Get("Access-Control-Allow-Methods"), "PATCH") {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	file := clip(3000)
	cr := a.tusReq("POST", d.URL, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "direct.mp4")}, file[:1000])
	if cr.status != 201 || cr.header.Get("Upload-Offset") != "1000" || cr.header.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(cr.header.Get("Access-Control-Expose-Headers"), "Location") {
		t.Fatalf("direct creation: %d %v %s", cr.status, cr.header, cr.body)
	}
	loc := cr.header.Get("Location")
	if loc != "/v1/uploads/tus/direct/"+token+"/"+d.ID {
		t.Fatalf("Location %q", loc)
	}
	// Once only.
	wantError(t, a.tusReq("POST", d.URL, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "again.mp4")}, nil), 409, "Conflict")
	// The upload with the token; not with another token, nor another account's key.
	if off, r := a.tusOffset(loc, ""); r.status != 200 || off != 1000 {
		t.Fatalf("HEAD: %d %d", r.status, off)
	}
	wrong := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	wantError(t, a.tusPatch("/v1/uploads/tus/direct/"+wrong+"/"+d.ID, "", 1000, file[1000:]), 404, "Not found")
	wantError(t, a.tusPatch("/v1/uploads/tus/direct/short/"+d.ID, "", 1000, file[1000:]), 404, "Not found")
	if r := a.tusPatch(loc, "", 1000, file[1000:]); r.status != 204 || r.header.Get("X-RateLimit-Limit") == "" {
		t.Fatalf("PATCH: %d %v %s", r.status, r.header, r.body)
	}
	a.wantVideo(key, d.ID, "direct.mp4")
	if strings.Contains(logs.String(), token) {
		t.Fatal("the direct upload token is in the logs")
	}
	if !strings.Contains(logs.String(), "direct/REDACTED") {
		t.Fatal("requests on direct upload URLs are not logged")
	}

	// Unknown tokens: 404.
	wantError(t, a.tusReq("POST", prefix+wrong, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "a.mp4")}, nil), 404, "Not found")
	// An expired URL is refused, and says so.
	r = a.do("POST", "/v1/uploads", key, `{"collection":"main","expiresIn":60}`)
	if err := json.Unmarshal(r.body, &d); err != nil || r.status != 201 {
		t.Fatalf("POST /v1/uploads: %d %s", r.status, r.body)
	}
	a.clock.Set(a.clock.Now().Add(61 * time.Second))
	m := wantError(t, a.tusReq("POST", d.URL, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "late.mp4")}, nil), 410, "Gone")
	if !strings.Contains(m["message"].(string), "expired") {
		t.Fatalf("expired URL: %v", m)
	}
	// A direct URL uploads into its own collection only.
	r = a.do("POST", "/v1/uploads", key, `{"collection":"main"}`)
	if err := json.Unmarshal(r.body, &d); err != nil || r.status != 201 {
		t.Fatalf("POST /v1/uploads: %d %s", r.status, r.body)
	}
	wantError(t, a.tusReq("POST", d.URL, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "a.mp4", "collection", "other")}, nil), 400, "Bad request")
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	tustest.WantStatus(t, r.tus(), status)
}

func TestRedactPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/v1/videos":                       "/v1/videos",
		"/v1/uploads/tus/01J":              "/v1/uploads/tus/01J",
		"/v1/uploads/tus/direct/secret":    "/v1/uploads/tus/direct/REDACTED",
		"/v1/uploads/tus/direct/secret/01": "/v1/uploads/tus/direct/REDACTED/01",
	} {
		if got := redactPath(in); got != want {
			t.Errorf("redactPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// One account's unfinished uploads do not hold another's back: a
// creation is checked against the disk with its own length (the bytes
// are checked as they arrive), and a 507 names only the caller's size.
func TestTusCreationIsCheckedWithItsOwnLength(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "size=8m")
	a := newTestAPI(t, mediaOn(t, disk), func(c *Config) {
		c.Uploads.DiskDirs = []string{disk}
		c.Uploads.DiskReserve = diskspace.Reserve{Bytes: 4 << 20}
		c.Plans = testPlans()
		for name, l := range c.Plans {
			l.MaxUploadBytes = 8 << 20
			c.Plans[name] = l
		}
	})
	a.dir = filepath.Join(disk, "media")
	carol := a.account("carol", domain.PlanPro)
	bob := a.account("bob", domain.PlanPro)
	room, err := a.s.disk.Room()
	if err != nil || room < 2<<20 {
		t.Fatalf("room %d %v", room, err)
	}
	meta := tusMeta("filename", "a.mp4", "collection", "main")
	create := func(key string, n int64) response {
		return a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{"Upload-Length": strconv.FormatInt(n, 10), "Upload-Metadata": meta}, nil)
	}
	first := create(carol, room*2/3)
	if first.status != 201 {
		t.Fatalf("carol's upload: %d %s", first.status, first.body)
	}
	if r := create(bob, room*2/3); r.status != 201 {
		t.Fatalf("bob's upload beside carol's: %d %s", r.status, r.body)
	}
	m := wantError(t, create(bob, room+1), 507, "Insufficient storage")
	if msg := m["message"].(string); !strings.Contains(msg, strconv.FormatInt(room+1, 10)) {
		t.Fatalf("507 message %q does not name the caller's own size", msg)
	}
	if files := a.tusFiles(); len(files) != 4 {
		t.Fatalf("refused creations left files: %v", files)
	}

	// With 1 MiB left above the reserve, a 1.5 MiB chunk gets 507 and
	// nothing of it is kept (its announced length is claimed first, and
	// does not fit); a smaller one is stored.
	fillBytes(t, disk, room-1<<20)
	loc := first.header.Get("Location")
	wantError(t, a.tusPatch(loc, carol, 0, clip(1536<<10)), 507, "Insufficient storage")
	if off, r := a.tusOffset(loc, carol); off != 0 {
		t.Fatalf("offset after a refused chunk: %d (%d %s)", off, r.status, r.body)
	}
	if r := a.tusPatch(loc, carol, 0, clip(256<<10)); r.status != 204 {
		t.Fatalf("a chunk that fits: %d %s", r.status, r.body)
	}
}

// An empty PATCH does not move the expiry (only bytes do), and an
// unfinished upload lives at most tusMaxAge whatever arrives.
func TestTusExpiryMovesOnlyWithBytes(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.TusExpiry = time.Hour })
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	loc := a.tusCreate(key, len(file))
	start := a.clock.Now()
	if r := a.tusPatch(loc, key, 0, file[:1000]); r.status != 204 {
		t.Fatalf("PATCH: %d", r.status)
	}
	a.clock.Set(start.Add(50 * time.Minute))
	r := a.tusReq("PATCH", loc, key, map[string]string{"Upload-Offset": "1000", "Content-Type": tus.ContentType}, nil)
	if r.status != 204 {
		t.Fatalf("empty PATCH: %d %s", r.status, r.body)
	}
	if got := r.header.Get("Upload-Expires"); got != start.Add(time.Hour).UTC().Format(http.TimeFormat) {
		t.Fatalf("empty PATCH moved Upload-Expires to %s", got)
	}
	a.clock.Set(start.Add(61 * time.Minute))
	wantStatus(t, a.tusReq("HEAD", loc, key, nil, nil), 410)

	// A drip of bytes keeps an upload no longer than tusMaxAge.
	loc = a.tusCreate(key, len(file))
	start = a.clock.Now()
	off := 0
	for a.clock.Now().Before(start.Add(tus.MaxAge(time.Hour) - 50*time.Minute)) {
		a.clock.Set(a.clock.Now().Add(50 * time.Minute))
		if r := a.tusPatch(loc, key, off, file[off:off+1]); r.status != 204 {
			t.Fatalf("PATCH at %d: %d %s", off, r.status, r.body)
		}
		off++
	}
	a.clock.Set(start.Add(tus.MaxAge(time.Hour)))
	wantStatus(t, a.tusReq("HEAD", loc, key, nil, nil), 410)
}

// A PATCH in flight holds one of the plan's upload slots, as a multipart
// upload does: with both of a free account's slots held, its PATCH gets
// 429 and the offset does not move.
func TestTusPatchTakesAnUploadSlot(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree) // 2 uploads at once
	file := clip(3000)
	loc := a.tusCreate(key, len(file))
	for range 2 {
		a.slowUpload(key)
	}
	eventstoretest.Eventually(t, "two uploads in flight", func() bool { return a.s.uploads.count("acme") == 2 })
	r := a.tusPatch(loc, key, 0, file)
	wantError(t, r, 429, respond.LabelRateLimited)
	if off, _ := a.tusOffset(loc, key); off != 0 {
		t.Fatalf("offset after a refused PATCH: %d", off)
	}
}

// With the media in the object store (--media nats), the last byte
// streams the upload's file into the bucket, and nothing stays in .tus.
func TestTusUploadIntoTheObjectStore(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { withObjects(t, c, c.Store.(*eventstore.Store)) })
	key := a.account("acme", domain.PlanFree)
	file := clip(5000)
	loc := a.tusStart(key, file, 2500)
	if r := a.tusPatch(loc, key, 2500, file[2500:]); r.status != 204 {
		t.Fatalf("last PATCH: %d %s", r.status, r.body)
	}
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	a.wantVideo(key, id, "clip.mp4")
	f, err := a.s.cfg.Media.Open(context.Background(), id, "original.mp4")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, file) {
		t.Fatalf("stored original differs (%v)", err)
	}
	if files := a.tusFiles(); len(files) != 1 || files[0] != id+".done" {
		t.Fatalf("finished upload left %v, want its completion record only", files)
	}
}

// An upload found complete at start (its acceptance cut short by a crash)
// gives its last byte back: the client sends it again and the video is
// accepted then.
func TestTusCompleteButUnacceptedAtStart(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	loc := a.tusStart(key, file, 2000)
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	// What a crash after the last PATCH wrote, before the commit, leaves.
	if err := os.WriteFile(filepath.Join(a.s.cfg.Uploads.TusDir, id+".bin"), file, 0o600); err != nil {
		t.Fatal(err)
	}
	u, _ := a.s.tus.Get(id)
	u.Offset = u.Length
	if err := a.s.tus.Save(u); err != nil {
		t.Fatal(err)
	}
	a.restart()
	off, _ := a.tusOffset(loc, key)
	if off != len(file)-1 {
		t.Fatalf("offset after restart: %d, want %d", off, len(file)-1)
	}
	if r := a.tusPatch(loc, key, off, file[off:]); r.status != 204 {
		t.Fatalf("last byte: %d %s", r.status, r.body)
	}
	a.wantVideo(key, id, "clip.mp4")
}

// directURL issues a direct upload URL into main and returns it and the
// video id.
func (a *testAPI) directURL(key string) (url, id string) {
	a.t.Helper()
	r := a.do("POST", "/v1/uploads", key, `{"collection":"main"}`)
	var d struct{ ID, URL string }
	if err := json.Unmarshal(r.body, &d); err != nil || r.status != 201 {
		a.t.Fatalf("POST /v1/uploads: %d %s", r.status, r.body)
	}
	return d.URL, d.ID
}

// Requests on a direct upload URL (anyone's who holds it) have a budget
// of their own: they never spend the account's, so a URL holder cannot
// lock the account out of its API.
func TestDirectUploadHasItsOwnRateBudget(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	url, _ := a.directURL(key)
	cr := a.tusReq("POST", url, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "d.mp4")}, nil)
	wantStatus(t, cr, 201)
	loc := cr.header.Get("Location")
	perMinute := testPlans().Limits(domain.PlanFree).RequestsPerMinute
	for i := range perMinute + 10 {
		if r := a.tusReq("HEAD", loc, "", nil, nil); r.status != 200 {
			t.Fatalf("HEAD %d: %d", i, r.status)
		}
	}
	if r := a.do("GET", "/v1/videos", key, ""); r.status != 200 {
		t.Fatalf("the account's own key after %d requests on its direct URL: %d %s", perMinute+10, r.status, r.body)
	}
	for range directRequestsPerMinute - perMinute - 10 {
		a.tusReq("HEAD", loc, "", nil, nil)
	}
	r := a.tusReq("HEAD", loc, "", nil, nil)
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Fatalf("past the direct URL's budget: %d %v", r.status, r.header)
	}
	if r := a.do("GET", "/v1/videos", key, ""); r.status != 200 {
		t.Fatalf("the account's own key: %d", r.status)
	}
}

// All of an account's direct upload URLs together have one budget that
// follows its plan (directPlanFactor times its requests per minute): more
// URLs do not multiply what the account may send, and a URL holder still
// cannot lock the account out of its API, nor reach another account's.
func TestDirectUploadURLsShareTheAccountsBudget(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	other := a.account("other", domain.PlanFree)
	budget := directPlanFactor * testPlans().Limits(domain.PlanFree).RequestsPerMinute
	upload := func(key string) string {
		url, _ := a.directURL(key)
		r := a.tusReq("POST", url, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "d.mp4")}, nil)
		wantStatus(t, r, 201)
		return r.header.Get("Location")
	}
	// Two URLs, each well under its own budget, spend the account's.
	first, second := upload(key), upload(key)
	for i := range budget - 2 {
		loc := first
		if i%2 == 1 {
			loc = second
		}
		if r := a.tusReq("HEAD", loc, "", nil, nil); r.status != 200 {
			t.Fatalf("HEAD %d of %d: %d %s", i, budget-2, r.status, r.body)
		}
	}
	if r := a.tusReq("HEAD", second, "", nil, nil); r.status != 429 || r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Limit") != strconv.Itoa(budget) {
		t.Fatalf("past the account's direct budget: %d %v", r.status, r.header)
	}
	// A new URL of the same account has nothing left either.
	url, _ := a.directURL(key)
	r := a.tusReq("POST", url, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "d.mp4")}, nil)
	m := wantError(t, r, 429, respond.LabelRateLimited)
	if !strings.Contains(m["message"].(string), "direct upload URLs together allows "+strconv.Itoa(budget)) {
		t.Fatalf("message %q", m["message"])
	}
	if r := a.do("GET", "/v1/videos", key, ""); r.status != 200 {
		t.Fatalf("the account's own key: %d %s", r.status, r.body)
	}
	wantStatus(t, a.tusReq("HEAD", upload(other), "", nil, nil), 200)
}

// A finished upload still answers, to its owner only, for --tus-expiry:
// HEAD says it is complete and a PATCH at its length is a 204 no-op, so a
// client that lost the last answer does not upload the file again.
func TestTusCompletedUploadAnswersComplete(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.TusExpiry = time.Hour })
	key := a.account("acme", domain.PlanFree)
	other := a.account("other", domain.PlanFree)
	file := clip(3000)
	loc := a.tusCreate(key, len(file))
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	wantStatus(t, a.tusPatch(loc, key, 0, file), 204)
	a.wantVideo(key, id, "clip.mp4")

	if off, r := a.tusOffset(loc, key); r.status != 200 || off != len(file) || r.header.Get("Upload-Length") != "3000" {
		t.Fatalf("HEAD of a finished upload: %d %v", r.status, r.header)
	}
	r := a.tusReq("PATCH", loc, key, map[string]string{"Upload-Offset": "3000", "Content-Type": tus.ContentType}, nil)
	if r.status != 204 || r.header.Get("Upload-Offset") != "3000" {
		t.Fatalf("PATCH at the final offset: %d %v %s", r.status, r.header, r.body)
	}
	wantError(t, a.tusPatch(loc, key, 0, file), 409, "Conflict")
	wantStatus(t, a.tusReq("HEAD", loc, other, nil, nil), 404)
	wantError(t, a.tusPatch(loc, other, 3000, nil), 404, "Not found")

	// A direct upload's, with its token only.
	url, did := a.directURL(key)
	cr := a.tusReq("POST", url, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "d.mp4")}, file)
	wantStatus(t, cr, 201)
	dloc := cr.header.Get("Location")
	a.wantVideo(key, did, "d.mp4")
	if off, r := a.tusOffset(dloc, ""); r.status != 200 || off != 3000 {
		t.Fatalf("HEAD of a finished direct upload: %d %d", r.status, off)
	}
	wrong := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	wantStatus(t, a.tusReq("HEAD", "/v1/uploads/tus/direct/"+wrong+"/"+did, "", nil, nil), 404)
	wantStatus(t, a.tusReq("HEAD", "/v1/uploads/tus/"+did, other, nil, nil), 404)

	// Kept through a restart, forgotten after the expiry.
	a.s = a.restart()
	if off, r := a.tusOffset(loc, key); r.status != 200 || off != 3000 {
		t.Fatalf("HEAD of a finished upload after a restart: %d %d", r.status, off)
	}
	a.clock.Set(a.clock.Now().Add(time.Hour + time.Second))
	a.s.tusUploads.Sweep()
	wantStatus(t, a.tusReq("HEAD", loc, key, nil, nil), 404)
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("expired completion records left %v", files)
	}
}

// The plan's size limit is the account's plan at the last byte, not the
// one it had at creation: an upload begun before a downgrade and larger
// than the new plan allows is refused (413) and removed.
func TestTusPlanDowngradeBeforeLastByte(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t, func(c *Config) {
		c.Plans = testPlans()
		l := c.Plans[domain.PlanFree]
		l.MaxUploadBytes = 4000
		c.Plans[domain.PlanFree] = l
	})
	key := a.account("acme", domain.PlanPro)
	file := clip(6000)
	loc := a.tusCreate(key, len(file))
	wantStatus(t, a.tusPatch(loc, key, 0, file[:3000]), 204)
	wantCode(t, a.do("PATCH", "/v1/admin/accounts/acme", testAdminToken, `{"plan":"free"}`), 200)
	wantError(t, a.tusPatch(loc, key, 3000, file[3000:]), 413, "File too large")
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	if r := a.do("GET", "/v1/videos/"+id, key, ""); r.status != 404 {
		t.Fatalf("an upload above the new plan's limit became a video: %d", r.status)
	}
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("refused upload left %v", files)
	}
}

// X-HTTP-Method-Override on a POST is honoured on tus upload URLs (as
// tusd does; tus-js-client's overridePatchMethod sends it), since the
// direct routes' preflight lists it.
func TestTusMethodOverride(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	loc := a.tusCreate(key, len(file))
	r := a.tusReq("POST", loc, key, map[string]string{"X-HTTP-Method-Override": "PATCH", "Upload-Offset": "0"}, file[:1000])
	if r.status != 204 || r.header.Get("Upload-Offset") != "1000" {
		t.Fatalf("POST overridden to PATCH: %d %v %s", r.status, r.header, r.body)
	}
	if r := a.tusReq("POST", loc, key, map[string]string{"X-HTTP-Method-Override": "HEAD"}, nil); r.status != 200 || r.header.Get("Upload-Offset") != "1000" {
		t.Fatalf("POST overridden to HEAD: %d %v", r.status, r.header)
	}
	url, id := a.directURL(key)
	cr := a.tusReq("POST", url, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "d.mp4")}, file[:1000])
	wantStatus(t, cr, 201)
	dloc := cr.header.Get("Location")
	r = a.tusReq("POST", dloc, "", map[string]string{"X-HTTP-Method-Override": "PATCH", "Upload-Offset": "1000"}, file[1000:])
	if r.status != 204 {
		t.Fatalf("direct POST overridden to PATCH: %d %s", r.status, r.body)
	}
	a.wantVideo(key, id, "d.mp4")
	// Elsewhere, and to other methods, it means nothing.
	wantStatus(t, a.tusReq("POST", loc, key, map[string]string{"X-HTTP-Method-Override": "GET"}, nil), 405)
	if r := a.do("GET", "/v1/videos", key, ""); r.status != 200 {
		t.Fatalf("GET: %d", r.status)
	}
}

// An account holds at most tus.DirectOutstandingMax unused direct upload URLs:
// more are 429 until one is used or expires.
func TestDirectUploadURLsAreCapped(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanBusiness)
	other := a.account("other", domain.PlanFree)
	var first string
	for i := range tus.DirectOutstandingMax {
		r := a.do("POST", "/v1/uploads", key, `{"collection":"main","expiresIn":120}`)
		if r.status != 201 {
			t.Fatalf("URL %d: %d %s", i, r.status, r.body)
		}
		if i == 0 {
			var d struct{ URL string }
			_ = json.Unmarshal(r.body, &d)
			first = d.URL
		}
		if i == tus.DirectOutstandingMax/2 {
			a.clock.Set(a.clock.Now().Add(time.Minute))
		}
	}
	m := wantError(t, a.do("POST", "/v1/uploads", key, `{"collection":"main"}`), 429, respond.LabelRateLimited)
	if !strings.Contains(m["message"].(string), strconv.Itoa(tus.DirectOutstandingMax)) {
		t.Fatalf("message %q", m["message"])
	}
	if r := a.do("POST", "/v1/uploads", other, `{"collection":"main"}`); r.status != 201 {
		t.Fatalf("another account: %d", r.status)
	}
	// Using one frees its place.
	wantStatus(t, a.tusReq("POST", first, "", map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "d.mp4")}, nil), 201)
	wantStatus(t, a.do("POST", "/v1/uploads", key, `{"collection":"main"}`), 201)
	wantError(t, a.do("POST", "/v1/uploads", key, `{"collection":"main"}`), 429, respond.LabelRateLimited)
	// Expiring frees the places of the first half.
	a.clock.Set(a.clock.Now().Add(61 * time.Second))
	wantStatus(t, a.do("POST", "/v1/uploads", key, `{"collection":"main"}`), 201)
}

// A creation-with-upload refused for its body (not a video, a checksum
// that does not match) leaves the direct upload URL unused, and says the
// upload was not created.
func TestDirectUploadRefusedCreationKeepsTheURL(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	url, id := a.directURL(key)
	meta := map[string]string{"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "d.mp4")}
	wantError(t, a.tusReq("POST", url, "", meta, bytes.Repeat([]byte("not a video "), 250)), 415, "Unsupported media type")
	file := clip(3000)
	sum := sha256.Sum256([]byte("something else"))
	meta["Upload-Checksum"] = "sha256 " + base64.StdEncoding.EncodeToString(sum[:])
	m := wantError(t, a.tusReq("POST", url, "", meta, file), 460, "Checksum mismatch")
	if msg := m["message"].(string); strings.Contains(msg, "send it again") || !strings.Contains(msg, "not created") {
		t.Fatalf("checksum mismatch at creation: %q", msg)
	}
	delete(meta, "Upload-Checksum")
	if r := a.tusReq("POST", url, "", meta, file); r.status != 201 {
		t.Fatalf("the URL after refused creations: %d %s", r.status, r.body)
	}
	a.wantVideo(key, id, "d.mp4")
}

// A body that trickles in (below uploadMinRate over a whole
// uploadRateWindow) ends, for tus and multipart alike, so a drip cannot
// hold an account's upload slots forever: 408 for multipart, 503 (which
// tus clients retry) for a tus PATCH, which keeps what arrived.
func TestSlowDripUploadsEnd(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.IdleTimeout = time.Hour }) // only the rate ends them
	key := a.account("acme", domain.PlanFree)
	loc, _, conn, file := a.dripPatch(key)
	first := diskspace.Block
	a.clock.Set(a.clock.Now().Add(uploadRateWindow + time.Second))
	_, _ = conn.Write(file[first : first+1])
	slow := &slowUpload{conn: conn, br: bufio.NewReader(conn)}
	if r := slow.response(t); r.status != 503 {
		t.Fatalf("a drip of a PATCH: %d %s", r.status, r.body)
	}
	if off, _ := a.tusOffset(loc, key); off != first+1 {
		t.Fatalf("offset after a drip was ended: %d, want the %d bytes received", off, first+1)
	}

	up := a.slowUpload(key)
	eventstoretest.Eventually(t, "the multipart upload in flight", func() bool { return a.s.uploads.count("acme") == 1 })
	a.clock.Set(a.clock.Now().Add(uploadRateWindow + time.Second))
	_, _ = up.conn.Write([]byte("x"))
	if r := up.response(t); r.status != 408 {
		t.Fatalf("a drip of a multipart upload: %d %s", r.status, r.body)
	}
}

// A PATCH or DELETE that waits (takeover) for the last chunk's request
// to let go finds the upload finished when it gets it: it answers as for
// a finished upload (PATCH at the length a 204 no-op, elsewhere 409;
// DELETE 409), never writes to the file that is gone (500) nor says it
// terminated a video that was created.
func TestTusRequestWaitingOnTheLastChunkSeesItFinished(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		method string
		offset func(n int) int
		status int
	}{
		{"PATCH at the length", "PATCH", func(n int) int { return n }, 204},
		{"PATCH at the last chunk's offset", "PATCH", func(n int) int { return n / 2 }, 409},
		{"DELETE", "DELETE", nil, 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t)
			key := a.account("acme", domain.PlanFree)
			file := clip(6000)
			loc := a.tusCreate(key, len(file))
			id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
			wantStatus(t, a.tusPatch(loc, key, 0, file[:3000]), 204)
			accepting, release := make(chan struct{}), make(chan struct{})
			a.s.tusAccepting = func(string) { close(accepting); <-release }
			released := false
			defer func() {
				if !released {
					close(release)
				}
			}()
			last := make(chan int, 1)
			go func() {
				req, _ := http.NewRequest("PATCH", a.srv.URL+loc, bytes.NewReader(file[3000:]))
				req.Header.Set("Tus-Resumable", "1.0.0")
				req.Header.Set("Content-Type", "application/offset+octet-stream")
				req.Header.Set("Upload-Offset", "3000")
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					last <- 0
					return
				}
				resp.Body.Close()
				last <- resp.StatusCode
			}()
			<-accepting
			second := make(chan response, 1)
			go func() {
				h := map[string]string{}
				var body []byte
				if tc.method == "PATCH" {
					h["Upload-Offset"] = strconv.Itoa(tc.offset(len(file)))
					if tc.status == 409 {
						body = file[3000:]
					} else {
						h["Content-Type"] = "application/offset+octet-stream"
					}
				}
				second <- a.tusReq(tc.method, loc, key, h, body)
			}()
			if tc.status == 409 && tc.method == "PATCH" {
				// At an offset not the stored one (the last chunk's
				// request has recorded the full length), it is refused
				// without waiting: nothing to take over.
				if r := <-second; r.status != 409 {
					t.Fatalf("PATCH at another offset while the last chunk was accepted: %d %s", r.status, r.body)
				}
				second <- response{status: 409}
			} else {
				eventstoretest.Eventually(t, "the second request to wait for the last chunk's", func() bool {
					return a.tusStore().Interrupted(id)
				})
			}
			released = true
			close(release)
			if st := <-last; st != 204 {
				t.Fatalf("the last chunk: %d", st)
			}
			r := <-second
			if r.status != tc.status {
				t.Fatalf("%s while the last chunk was accepted: %d %s, want %d", tc.method, r.status, r.body, tc.status)
			}
			if tc.status == 204 && r.header.Get("Upload-Offset") != strconv.Itoa(len(file)) {
				t.Fatalf("Upload-Offset %q", r.header.Get("Upload-Offset"))
			}
			a.wantVideo(key, id, "clip.mp4")
		})
	}
}

// Uploads made through direct upload URLs (by end users) have caps of
// their own: unfinished ones do not count against the account's cap on
// unfinished uploads, and their PATCHes take slots of their own, so URL
// holders cannot lock the account out of its own uploads.
func TestDirectUploadsDoNotTakeTheAccountsOwn(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	limits := testPlans().Limits(domain.PlanFree)
	file := clip(6000)
	var locs []string
	for range tus.MaxUnfinished(limits) + 1 {
		url, _ := a.directURL(key)
		cr := a.tusReq("POST", url, "", map[string]string{"Upload-Length": strconv.Itoa(len(file)), "Upload-Metadata": tusMeta("filename", "d.mp4")}, nil)
		wantStatus(t, cr, 201)
		locs = append(locs, cr.header.Get("Location"))
	}
	for i := range limits.ConcurrentUploads { // direct PATCHes in flight, as many as the plan runs at once
		conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "PATCH %s HTTP/1.1\r\nHost: kino\r\nTus-Resumable: 1.0.0\r\n"+
			"Content-Type: application/offset+octet-stream\r\nUpload-Offset: 0\r\nContent-Length: %d\r\n\r\n", locs[i], len(file))
		_, _ = conn.Write(file[:3000])
	}
	eventstoretest.Eventually(t, "the direct PATCHes in flight", func() bool {
		return a.s.uploads.count(tus.DirectPool("acme")) == limits.ConcurrentUploads
	})
	own := a.tusCreate(key, len(file))
	if r := a.tusPatch(own, key, 0, file); r.status != 204 {
		t.Fatalf("the account's own PATCH while direct uploads run: %d %s", r.status, r.body)
	}
	if r := a.uploadTo(key, "main", "m.mp4", file); r.status == 429 {
		t.Fatalf("the account's own multipart upload while direct uploads run: %d %s", r.status, r.body)
	}
	// A direct upload past the direct pool waits its turn, as the
	// account's own would.
	r := a.tusPatch(locs[len(locs)-1], "", 0, file)
	wantError(t, r, 429, respond.LabelRateLimited)
}

// A tus PATCH ended for a stalled or too slow body answers 503 with
// Retry-After, which tus clients retry (tus-js-client retries no 4xx but
// 409 and 423), not 408: what arrived is kept, and the client resumes
// from Upload-Offset.
func TestTusStalledPatchAsksForARetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		idle time.Duration
		slow bool
	}{
		{"idle", 200 * time.Millisecond, false},
		{"too slow", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t, func(c *Config) { c.Uploads.IdleTimeout = tc.idle })
			key := a.account("acme", domain.PlanFree)
			loc, id, conn, file := a.dripPatch(key)
			want := diskspace.Block
			if tc.slow {
				a.clock.Set(a.clock.Now().Add(uploadRateWindow + time.Second))
				_, _ = conn.Write(file[want : want+1])
				want++
			}
			r := (&slowUpload{conn: conn, br: bufio.NewReader(conn)}).response(t)
			m := wantError(t, r, 503, "Service unavailable")
			if r.header.Get("Retry-After") != "1" || !strings.Contains(m["message"].(string), "Upload-Offset") {
				t.Fatalf("503 of a stalled PATCH: %v %s", r.header, r.body)
			}
			if off, _ := a.tusOffset(loc, key); off != want {
				t.Fatalf("offset after a stalled PATCH: %d, want the %d bytes received", off, want)
			}
			if r := a.tusPatch(loc, key, want, file[want:]); r.status != 204 {
				t.Fatalf("resume: %d %s", r.status, r.body)
			}
			a.wantVideo(key, id, "clip.mp4")
		})
	}
}

// Direct upload URLs issued at once for one account all succeed: the
// account's index of unused URLs is updated by compare-and-set, and a
// request that loses the race retries (with a little random backoff)
// rather than answer 503.
func TestDirectUploadURLsIssuedConcurrently(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanBusiness)
	const n = 40
	statuses := make(chan string, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			req, _ := http.NewRequest("POST", a.srv.URL+"/v1/uploads", strings.NewReader(`{"collection":"main"}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			statuses <- fmt.Sprintf("%d %s", resp.StatusCode, b)
		}()
	}
	close(start)
	failed := 0
	for range n {
		if st := <-statuses; !strings.HasPrefix(st, "201 ") {
			failed++
			t.Log(st)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d concurrent issues failed", failed, n)
	}
	if got := a.directIndexLen("acme"); got != n {
		t.Fatalf("index of unused URLs holds %d, want %d", got, n)
	}
}

func (a *testAPI) directIndexLen(account string) int {
	a.t.Helper()
	b, _, err := a.s.cfg.Uploads.Direct.Get(context.Background(), tus.DirectIndexKey(account))
	if err != nil {
		a.t.Fatal(err)
	}
	var idx map[string]time.Time
	if err := json.Unmarshal(b, &idx); err != nil {
		a.t.Fatal(err)
	}
	return len(idx)
}

// A PATCH at an offset other than the one the in-flight PATCH started
// from (the stored offset, what HEAD answers) is a stray: 409, and the
// in-flight PATCH goes on uninterrupted.
func TestTusStrayPatchDoesNotTakeOver(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	first := diskspace.Block // writes end on a Block: the first bytes show in the file
	file := clip(2 * first)
	loc := a.tusCreate(key, len(file))
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	conn := a.heldPatch(loc, key, 0, len(file))
	_, _ = conn.Write(file[:first])
	eventstoretest.Eventually(t, "the PATCH to hold the upload and write its bytes", func() bool {
		fi, err := os.Stat(a.s.tus.DataPath(id))
		return a.tusStore().Busy(id) && err == nil && fi.Size() == int64(first)
	})
	for _, off := range []int{100, first, 2 * first} {
		wantError(t, a.tusPatch(loc, key, off, file[:10]), 409, "Conflict")
	}
	_, _ = conn.Write(file[first:])
	if r := (&slowUpload{conn: conn, br: bufio.NewReader(conn)}).response(t); r.status != 204 {
		t.Fatalf("the PATCH in flight, after stray PATCHes: %d %s", r.status, r.body)
	}
	a.wantVideo(key, id, "clip.mp4")
}

// tusStore is the API's tus store, to watch which request holds an upload.
func (a *testAPI) tusStore() *tus.FileStore {
	a.t.Helper()
	return a.s.tus
}
