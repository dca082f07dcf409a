package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/admin"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/seal"
	"github.com/kino-video/kino/transport/tus/tustest"
)

// testAPI is the API on real dependencies: an embedded JetStream server
// on a random port, a bbolt file and a media directory in t.TempDir(),
// a running projector, served by httptest on loopback.
type testAPI struct {
	t     *testing.T
	s     *Server
	srv   *httptest.Server
	store *eventstore.Store
	proj  *projections.Projector
	media *media.Dir
	dir   string // the media directory
	clock *eventstoretest.Clock
	nats  *natsserver.Embedded
	// natsDir holds the NATS store, to restart the server on.
	natsDir string
	// storeLog is what the event store logged.
	storeLog *lockedBuffer
}

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testPlans are the default plans with small upload sizes.
func testPlans() domain.Plans {
	p := domain.DefaultPlans()
	for name, l := range p {
		l.MaxUploadBytes = 1 << 20
		p[name] = l
	}
	return p
}

func newTestAPI(t *testing.T, configure ...func(*Config)) *testAPI {
	t.Helper()
	return newTestAPIFrom(t, nil, configure...)
}

// newTestAPIFrom is newTestAPI whose projector reads what source makes of
// the store.
func newTestAPIFrom(t *testing.T, source func(*eventstore.Store) projections.EventSource, configure ...func(*Config)) *testAPI {
	t.Helper()
	natsDir := t.TempDir()
	nats := eventstoretest.Server(t, natsDir)
	storeLog := &lockedBuffer{}
	store, err := eventstore.Open(context.Background(), eventstore.Config{URL: nats.URL(), Auth: nats.Auth(eventstore.RoleServe),
		Name: t.Name(), Manage: true, Log: slog.New(slog.NewTextHandler(storeLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return newTestAPIOn(t, nats, natsDir, store, storeLog, source, configure...)
}

// newClusterAPI is the API on one node of a cluster of three embedded
// servers, with the streams unreplicated (one replica each) and the event
// stream on another node than the API's, which it returns: shutting that
// node down leaves the API connected to an event store that takes no
// writes. Appends go unacknowledged after a second, and writes known to
// fail are probed again every 100 ms.
func newClusterAPI(t *testing.T, configure ...func(*Config)) (*testAPI, *eventstoretest.Cluster, int) {
	t.Helper()
	c := eventstoretest.StartCluster(t, 3)
	host, _, err := c.Open(0, 1).StreamLeader(context.Background()) // makes the streams
	if err != nil || host == "" {
		t.Fatalf("event stream's server %q: %v", host, err)
	}
	node, stream := -1, -1
	for i, n := range c.Nodes {
		switch {
		case n.Name() == host:
			stream = i
		case node < 0:
			node = i
		}
	}
	storeLog := &lockedBuffer{}
	store := c.Open(node, 1, func(cfg *eventstore.Config) {
		cfg.AckTimeout, cfg.ProbeEvery = time.Second, 100*time.Millisecond
		cfg.Log = slog.New(slog.NewTextHandler(storeLog, nil))
	})
	return newTestAPIOn(t, c.Nodes[node], c.Dirs[node], store, storeLog, nil, configure...), c, stream
}

// newTestAPIOn is the API on store, whose server is nats (storing in
// natsDir). Its projector reads the store, or what source makes of it.
func newTestAPIOn(t *testing.T, nats *natsserver.Embedded, natsDir string, store *eventstore.Store, storeLog *lockedBuffer,
	source func(*eventstore.Store) projections.EventSource, configure ...func(*Config)) *testAPI {
	t.Helper()
	db, err := projections.OpenDB(filepath.Join(t.TempDir(), "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	var src projections.EventSource = store
	if source != nil {
		src = source(store)
	}
	proj, err := projections.NewProjector(db, src, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proj.Run(ctx) }()
	dir := filepath.Join(t.TempDir(), "media")
	ms, err := media.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	clk := eventstoretest.NewClock(time.Date(2026, 11, 22, 12, 0, 10, 0, time.UTC))
	key, err := seal.LoadOrCreate(filepath.Join(t.TempDir(), "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	limits, err := kv.OpenRateLimits(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := kv.OpenDirectUploads(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := kv.OpenPlaybackKeys(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: store, Queues: queue.New(store), DB: db, Projector: proj, Media: ms, Plans: testPlans(), Log: quiet, Now: clk.Now,
		Secrets: key, Origin: Origin{CDNURL: "http://cdn.example.test:8443/cdn"}, Limits: Limits{Ledger: limits},
		Playback: Playback{Keys: playback.NewRing(ring, key, nil)},
		Uploads:  Uploads{TusDir: filepath.Join(dir, ".tus"), Direct: direct}}
	for _, c := range configure {
		c(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(s)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		<-done
		db.Close()
	})
	return &testAPI{t: t, s: s, srv: srv, store: store, proj: proj, media: ms, dir: dir, clock: clk,
		nats: nats, natsDir: natsDir, storeLog: storeLog}
}

// withObjects keeps the API's media in the object store of store.
func withObjects(t *testing.T, c *Config, store *eventstore.Store) {
	t.Helper()
	obj, err := objects.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "media")
	m, err := media.OpenBucket(obj, local, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Media, c.Uploads.TusDir = m, filepath.Join(local, ".tus")
}

// node is another API node on a's configuration (its store, read model
// and directories), served until the test ends.
func (a *testAPI) node() (*Server, *httptest.Server) {
	a.t.Helper()
	s, err := New(a.s.cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	srv := serveHTTP(s)
	a.t.Cleanup(srv.Close)
	return s, srv
}

// serveHTTP serves s on a loopback port as kino serve does: each
// request's context holds its connection (respond.Cork).
func serveHTTP(s *Server) *httptest.Server {
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.ConnContext = respond.WithConn
	srv.Start()
	return srv
}

// restart serves the API from a new Server on the same configuration, as
// a restarted process would, stops the old one's listener and returns the
// new Server.
func (a *testAPI) restart() *Server {
	a.t.Helper()
	s, srv := a.node()
	a.srv.Close()
	a.srv = srv
	return s
}

// settle waits until the read models hold seq.
func (a *testAPI) settle(seq uint64) {
	a.t.Helper()
	// 30 s: a three-node cluster just started on a loaded two-core machine
	// took over 10 s to hand the projector its first event.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.proj.WaitFor(ctx, seq); err != nil {
		a.t.Fatal(err)
	}
}

// account creates an account with one key and a collection "main", and
// returns the key.
func (a *testAPI) account(slug string, plan domain.Plan) string {
	a.t.Helper()
	ctx := context.Background()
	if _, err := eventstore.Execute[domain.Account](ctx, a.store, domain.StreamID{Aggregate: domain.AggAccount, ID: slug},
		domain.CreateAccount{Slug: slug, Plan: plan}); err != nil {
		a.t.Fatal(err)
	}
	key, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		a.t.Fatal(err)
	}
	res, err := eventstore.Execute[domain.Account](ctx, a.store, domain.StreamID{Aggregate: domain.AggAccount, ID: slug},
		domain.IssueKey{KeyID: a.store.NewID(), Hash: domain.HashKey(key), Prefix: key[:len(domain.KeyPrefix)+4], Label: "test"})
	if err != nil {
		a.t.Fatal(err)
	}
	a.settle(res.LastSeq())
	if r := a.do("POST", "/v1/collections", key, `{"slug":"main","name":"Main"}`); r.status != 201 {
		a.t.Fatalf("create collection: %d %s", r.status, r.body)
	}
	return key
}

type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server closes the connection after it
}

// tus is r as a tus client's answer, for its checks.
func (r response) tus() tustest.Response {
	return tustest.Response{Status: r.status, Header: r.header, Body: r.body, Close: r.close}
}

// tus is a client of the running server: tus requests and the others.
func (a *testAPI) tus() *tustest.Client { return &tustest.Client{T: a.t, URL: a.srv.URL} }

// fromTus is a tus client's answer as the other helpers' answers.
func fromTus(r tustest.Response) response {
	return response{status: r.Status, header: r.Header, body: r.Body, close: r.Close}
}

// request sends req with key as its bearer token (none when empty).
func (a *testAPI) request(req *http.Request, key string) response {
	a.t.Helper()
	return fromTus(a.tus().Send(req, key))
}

// do sends method to path with body (none when empty) as it is.
func (a *testAPI) do(method, path, key, body string) response {
	a.t.Helper()
	return fromTus(a.tus().Do(method, path, key, body))
}

// uploadBody is the multipart body of an upload of file named filename
// into "main", and its Content-Type.
func uploadBody(filename string, file []byte) (body *bytes.Buffer, contentType string) {
	body = new(bytes.Buffer)
	mw := multipart.NewWriter(body)
	_ = mw.WriteField("collection", "main")
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write(file)
	_ = mw.Close()
	return body, mw.FormDataContentType()
}

// upload posts a multipart upload of file named filename into "main".
func (a *testAPI) upload(key, filename string, file []byte) response {
	a.t.Helper()
	body, ct := uploadBody(filename, file)
	req, err := http.NewRequest("POST", a.srv.URL+"/v1/videos", body)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	return a.request(req, key)
}

// incoming lists what lies in the media directory's upload area.
func (a *testAPI) incoming() []string {
	a.t.Helper()
	return tustest.Files(a.t, filepath.Join(a.dir, ".incoming"))
}

// wantError checks an error answer: status, label, and a body of exactly
// {error, message} with a message.
func wantError(t *testing.T, r response, status int, label string) map[string]any {
	t.Helper()
	return tustest.WantError(t, r.tus(), status, label)
}

// replayFunc is a Replayer for tests of the admin route.
type replayFunc func() (any, error)

func (f replayFunc) Replay(context.Context, bool, func(admin.ReplayProgress)) (any, error) {
	return f()
}
