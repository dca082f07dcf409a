package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/tus"
)

// outage stops a NATS server, and starts it again on its port and store.
type outage struct {
	t     *testing.T
	srv   *natsserver.Embedded
	dir   string
	host  string
	store *eventstore.Store // a store on the server, to see it go and come back
}

func newOutage(t *testing.T, srv *natsserver.Embedded, dir string, store *eventstore.Store) *outage {
	return &outage{t: t, srv: srv, dir: dir, host: strings.TrimPrefix(srv.URL(), "nats://"), store: store}
}

// stop shuts the server down and waits until the store sees it gone.
func (o *outage) stop() {
	o.t.Helper()
	o.srv.Shutdown()
	eventstoretest.Eventually(o.t, "the store to see its server gone", func() bool { return !o.store.Health().Connected })
}

// start starts the server again and waits until the store is back.
func (o *outage) start() {
	o.t.Helper()
	srv, err := natsserver.StartEmbedded(o.dir, o.host)
	if err != nil {
		o.t.Fatal(err)
	}
	o.t.Cleanup(srv.Shutdown)
	o.srv = srv
	eventstoretest.Eventually(o.t, "the store to reconnect", func() bool { return o.store.Health().Connected })
}

// pendingCase is a way the acceptance of a complete tus upload fails: an
// API, and the outage to cause while the upload is being accepted.
type pendingCase struct {
	name string
	open func(t *testing.T) (*testAPI, *outage)
}

var pendingCases = []pendingCase{
	{"media directory, the event store stops", func(t *testing.T) (*testAPI, *outage) {
		a := newTestAPI(t)
		return a, newOutage(t, a.nats, a.natsDir, a.store)
	}},
	{"media in the object store, its NATS server (the event store's) stops", func(t *testing.T) (*testAPI, *outage) {
		a := newTestAPI(t, func(c *Config) { withObjects(t, c, c.Store.(*eventstore.Store)) })
		return a, newOutage(t, a.nats, a.natsDir, a.store)
	}},
	{"media in the object store, which alone stops", func(t *testing.T) (*testAPI, *outage) {
		dir := t.TempDir()
		srv := eventstoretest.Server(t, dir)
		ms := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
		a := newTestAPI(t, func(c *Config) { withObjects(t, c, ms) })
		return a, newOutage(t, srv, dir, ms)
	}},
}

// pendingUpload uploads file with tus, the outage o starting as its last
// PATCH is accepted: that PATCH answers 503, and the upload stays,
// pending. It returns the upload's path.
func (a *testAPI) pendingUpload(key string, file []byte, o *outage) string {
	a.t.Helper()
	loc := a.tusCreate(key, len(file))
	if r := a.tusPatch(loc, key, 0, file[:len(file)/2]); r.status != 204 {
		a.t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	var once sync.Once
	a.s.tusAccepting = func(string) { once.Do(o.stop) }
	r := a.tusPatch(loc, key, len(file)/2, file[len(file)/2:])
	a.s.tusAccepting = nil
	wantError(a.t, r, 503, "Service unavailable")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		a.t.Fatalf("503 with Retry-After %q", r.header.Get("Retry-After"))
	}
	return loc
}

// pending opens the case's API, with an account, and makes a pending
// upload there: it returns them, the outage, the upload's path and file.
func (tc pendingCase) pending(t *testing.T) (a *testAPI, o *outage, key, loc string, file []byte) {
	t.Helper()
	a, o = tc.open(t)
	key = a.account("acme", domain.PlanFree)
	file = clip(5000)
	loc = a.pendingUpload(key, file, o)
	a.wantPending(loc, key, file)
	return a, o, key, loc, file
}

// wantPending checks that the upload at loc, of file, is pending: HEAD
// answers one byte short of its length, every byte is kept, and there is
// no video yet.
func (a *testAPI) wantPending(loc, key string, file []byte) {
	a.t.Helper()
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	off, r := a.tusOffset(loc, key)
	if r.status != 200 || off != len(file)-1 || r.header.Get("Upload-Length") != strconv.Itoa(len(file)) {
		a.t.Fatalf("HEAD of a complete upload not accepted yet: %d, Upload-Offset %d, Upload-Length %q; want 200, %d, %d",
			r.status, off, r.header.Get("Upload-Length"), len(file)-1, len(file))
	}
	if got, err := os.ReadFile(filepath.Join(a.s.cfg.Uploads.TusDir, id+".bin")); err != nil || !bytes.Equal(got, file) {
		a.t.Fatalf("the upload's bytes: %d of %d kept (%v)", len(got), len(file), err)
	}
	if files := a.tusFiles(); !slices.Equal(files, []string{id + ".bin", id + ".json"}) {
		a.t.Fatalf("the tus directory holds %v", files)
	}
	if r := a.do("GET", "/v1/videos/"+id, key, ""); r.status != 404 {
		a.t.Fatalf("GET the video of a pending upload: %d %s", r.status, r.body)
	}
	a.wantNoLeftovers(id)
}

// wantNoLeftovers checks, with a media directory, that nothing of video
// id is there yet (an original committed before its event failed was
// taken back), and nothing lies in its upload area.
func (a *testAPI) wantNoLeftovers(id string) {
	a.t.Helper()
	if _, ok := a.s.cfg.Media.(*media.Dir); !ok {
		return
	}
	if _, err := os.Stat(filepath.Join(a.dir, id)); !errors.Is(err, fs.ErrNotExist) {
		a.t.Fatalf("the media directory holds %s before its video exists (%v)", id, err)
	}
	if in := a.incoming(); len(in) != 0 {
		a.t.Fatalf("the media directory's upload area holds %v", in)
	}
}

// wantAccepted checks that the upload at loc became one video of file,
// with one UploadAccepted, and left nothing but its completion record.
func (a *testAPI) wantAccepted(loc, key string, file []byte) {
	a.t.Helper()
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	a.wantVideo(key, id, "clip.mp4")
	f, err := a.s.cfg.Media.Open(context.Background(), id, "original.mp4")
	if err != nil {
		a.t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, file) {
		a.t.Fatalf("stored original: %d bytes, want the %d uploaded (%v)", len(got), len(file), err)
	}
	r := a.do("GET", "/v1/videos/"+id+"/events", key, "")
	var h struct{ Events []struct{ Type string } }
	if err := json.Unmarshal(r.body, &h); err != nil || r.status != 200 {
		a.t.Fatalf("events: %d %s", r.status, r.body)
	}
	n := 0
	for _, e := range h.Events {
		if e.Type == domain.TypeUploadAccepted {
			n++
		}
	}
	if n != 1 {
		a.t.Fatalf("%d UploadAccepted events, want 1: %s", n, r.body)
	}
	if files := a.tusFiles(); !slices.Equal(files, []string{id + ".done"}) {
		a.t.Fatalf("the accepted upload left %v, want its completion record only", files)
	}
	if _, ok := a.s.cfg.Media.(*media.Dir); ok {
		if in := a.incoming(); len(in) != 0 {
			a.t.Fatalf("the media directory's upload area holds %v", in)
		}
	}
	if off, r := a.tusOffset(loc, key); r.status != 200 || off != len(file) {
		a.t.Fatalf("HEAD of the accepted upload: %d, Upload-Offset %d", r.status, off)
	}
}

// An upload whose every byte is in survives an acceptance that fails for
// want of a store: the last PATCH answers 503, HEAD then one byte short of
// the length (not 404), every byte is kept, and the client's PATCH of that
// last byte, as tus-js-client sends it after HEAD, makes the video once
// the store is back. Whatever the media backend, and whichever store is
// gone: the event store (the original stored first is taken back), or the
// object store.
func TestTusLastChunkSurvivesAFailedAcceptance(t *testing.T) {
	t.Parallel() // waits on servers stopping and coming back, not on the CPU
	for _, tc := range pendingCases {
		t.Run(tc.name, func(t *testing.T) {
			a, o, key, loc, file := tc.pending(t)
			// The client is told to wait: its PATCH of the last byte
			// (after HEAD) is refused, and changes nothing.
			wantError(t, a.tusPatch(loc, key, len(file)-1, file[len(file)-1:]), 503, "Service unavailable")
			a.wantPending(loc, key, file)

			o.start()
			eventstoretest.Eventually(t, "the event store to take writes", func() bool { return a.s.writableNow() == nil })
			off, _ := a.tusOffset(loc, key)
			if r := a.tusPatch(loc, key, off, file[off:]); r.status != 204 || r.header.Get("Upload-Offset") != strconv.Itoa(len(file)) {
				t.Fatalf("PATCH of the last byte once the store is back: %d %v %s", r.status, r.header, r.body)
			}
			a.wantAccepted(loc, key, file)
		})
	}
}

// A pending upload becomes a video by kino's own doing once the stores
// are back, its client gone: a client that comes back then (or that, as
// some do, takes HEAD's offset at the length for a finished upload) finds
// it complete.
func TestTusPendingUploadIsAcceptedByKino(t *testing.T) {
	t.Parallel() // waits on servers stopping and coming back, not on the CPU
	for _, tc := range pendingCases {
		t.Run(tc.name, func(t *testing.T) {
			a, o, key, loc, file := tc.pending(t)
			a.s.tusRetryEvery = 10 * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { a.s.SweepUploads(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })

			o.start()
			id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
			eventstoretest.Eventually(t, "kino to accept the upload", func() bool { return slices.Equal(a.tusFiles(), []string{id + ".done"}) })
			a.wantAccepted(loc, key, file)
			if r := a.tusPatch(loc, key, len(file), nil, "Content-Type", tus.ContentType); r.status != 204 || r.header.Get("Upload-Offset") != strconv.Itoa(len(file)) {
				t.Fatalf("PATCH at the length: %d %v %s", r.status, r.header, r.body)
			}
		})
	}
}

// Kino's own try and the client's PATCH of the last byte, at once, make
// one video, whichever gets the upload first; the client is told 204, or
// 409 when kino has made the video meanwhile (HEAD then says complete).
func TestTusPendingUploadTriedTwiceAtOnce(t *testing.T) {
	t.Parallel() // waits on servers stopping and coming back, not on the CPU
	a, o := pendingCases[1].open(t)
	key := a.account("acme", domain.PlanFree)
	for round := range 2 {
		file := clip(5000 + round)
		loc := a.pendingUpload(key, file, o)
		o.start()
		eventstoretest.Eventually(t, "the event store to take writes", func() bool { return a.s.writableNow() == nil })
		var wg sync.WaitGroup
		var r response
		wg.Add(2)
		go func() { defer wg.Done(); r = a.tusPatch(loc, key, len(file)-1, file[len(file)-1:]) }()
		go func() { defer wg.Done(); a.s.tusUploads.FinishPending(context.Background()) }()
		wg.Wait()
		if r.status != 204 && r.status != 409 {
			t.Fatalf("round %d: the client's PATCH of the last byte: %d %s", round, r.status, r.body)
		}
		a.wantAccepted(loc, key, file)
		id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
		if err := a.s.tus.Forget(id); err != nil { // the next round's tus directory holds its own files only
			t.Fatal(err)
		}
	}
}

// A creation with upload whose body is the whole file, accepted while a
// store is gone, still creates the upload (201, Location), and tells the
// client the offset of its last byte: had it been refused, the client
// would create another upload, and kino would make two videos of one file.
func TestTusCreationWithUploadSurvivesAFailedAcceptance(t *testing.T) {
	t.Parallel()
	a, o := pendingCases[0].open(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	var once sync.Once
	a.s.tusAccepting = func(string) { once.Do(o.stop) }
	r := a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": strconv.Itoa(len(file)), "Upload-Metadata": tusMeta("filename", "clip.mp4", "collection", "main")}, file)
	a.s.tusAccepting = nil
	loc := r.header.Get("Location")
	if r.status != 201 || !strings.HasPrefix(loc, "/v1/uploads/tus/") || r.header.Get("Upload-Offset") != strconv.Itoa(len(file)-1) {
		t.Fatalf("creation with the whole file, not accepted: %d %v %s", r.status, r.header, r.body)
	}
	a.wantPending(loc, key, file)
	o.start()
	eventstoretest.Eventually(t, "the event store to take writes", func() bool { return a.s.writableNow() == nil })
	if r := a.tusPatch(loc, key, len(file)-1, file[len(file)-1:]); r.status != 204 {
		t.Fatalf("PATCH of the last byte: %d %s", r.status, r.body)
	}
	a.wantAccepted(loc, key, file)
}

// A try whose answer was lost may have made the video after all: its
// event stored, its original kept, with --media dir a link to the
// upload's bytes. A PATCH of the last byte then finds the video and
// answers that the upload is complete, writing nothing: here, rewriting
// that byte under a checksum that does not match would have cut the
// video's original short.
func TestTusPendingUploadWhoseVideoExists(t *testing.T) {
	t.Parallel()
	a, o, key, loc, file := pendingCases[0].pending(t)
	o.start()
	eventstoretest.Eventually(t, "the event store to take writes", func() bool { return a.s.writableNow() == nil })
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	ctx := context.Background()
	src, err := a.s.tus.CommitFile(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.s.cfg.Media.Commit(ctx, src, id, ".mp4"); err != nil {
		t.Fatal(err)
	}
	res, err := eventstore.Execute[domain.Video](ctx, a.store, videoStream(id), domain.AcceptUpload{Account: "acme",
		Collection: "main", CollectionName: "Main", Filename: "clip.mp4", Size: int64(len(file)), MaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	wrong := "sha1 " + base64.StdEncoding.EncodeToString(make([]byte, 20))
	wantError(t, a.tusPatch(loc, key, len(file)-1, file[len(file)-1:], "Upload-Checksum", wrong), 409, "Conflict")
	a.wantAccepted(loc, key, file)
}
