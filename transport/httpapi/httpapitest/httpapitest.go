// Package httpapitest runs kino's API in a test on real dependencies, for
// the tests of other packages (the Go client's, first): an embedded
// JetStream server on a random port, a bbolt read-model file and a media
// directory in temp dirs, a running projector, served by httptest on
// loopback. Optionally a transcoder with the real ffmpeg, and webhook
// delivery (to loopback receivers, with a short backoff).
//
// It is wired as `kino serve` wires the same parts (cmd/kino/serve.go),
// without the CLI's flags, logs or cluster: cmd/kino's own harness tests
// the whole binary.
package httpapitest

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/seal"
	"github.com/kino-video/kino/transport/transcoder"
	"github.com/kino-video/kino/transport/webhook"
)

// Options choose what runs besides the API.
type Options struct {
	// Plans are the accounts' plans (default domain.DefaultPlans()).
	Plans domain.Plans
	// Transcode runs one transcoder with the real ffmpeg (as nobody when
	// the test runs as root, as kino serve does), two attempts a video.
	Transcode bool
	// Webhooks runs the fan-out and the delivery of webhooks, allowed to
	// reach loopback receivers, retrying after 50 ms then giving up.
	Webhooks bool
	// Configure changes the API's configuration before it starts.
	Configure func(*httpapi.Config)
}

// SmallPlans are the default plans with small upload limits, so that size
// checks need only small files: 256 KiB, 512 MiB on business.
func SmallPlans() domain.Plans {
	p := domain.DefaultPlans()
	for name, l := range p {
		l.MaxUploadBytes = 256 << 10
		if name == domain.PlanBusiness {
			l.MaxUploadBytes = 512 << 20
		}
		p[name] = l
	}
	return p
}

// Kino is a running API.
type Kino struct {
	t testing.TB
	// URL is the server's root, http://127.0.0.1:<port>; BaseURL is URL
	// + "/v1", the interface's {base_url}.
	URL, BaseURL string
	Store        *eventstore.Store
	Server       *httpapi.Server
	HTTP         *httptest.Server
	projector    *projections.Projector
	clock        *Clock
	mediaDir     string
}

// Clock is the API's clock (rate limits, timestamps): real time plus an
// offset a test moves forward, so that waiting a minute for a rate limit
// costs nothing.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Start runs kino's API until the test ends.
func Start(t testing.TB, o Options) *Kino {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	run := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("httpapitest: %s stopped: %v", name, err)
			}
		}()
	}
	base := t.TempDir()
	nats := eventstoretest.Server(t, filepath.Join(base, "nats"))
	clk := &Clock{}
	store, err := eventstore.Open(ctx, eventstore.Config{URL: nats.URL(), Auth: nats.Auth(eventstore.RoleServe),
		Name: t.Name(), Manage: true, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	db, err := projections.OpenDB(filepath.Join(base, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	proj, err := projections.NewProjector(db, store, quiet)
	if err != nil {
		t.Fatal(err)
	}
	var user *ffmpeg.User
	if o.Transcode && os.Geteuid() == 0 {
		// ffmpeg runs as nobody, which must pass through go test's 0700
		// temp dirs to reach its work directory.
		if user, err = ffmpeg.LookupUser("nobody"); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{base, filepath.Dir(base)} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	ms, err := media.OpenDir(filepath.Join(base, "media"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := seal.LoadOrCreate(filepath.Join(base, "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	limits, err := kv.OpenRateLimits(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	progress, err := kv.OpenProgress(ctx, store)
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
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	cdn := url + "/cdn"
	q := queue.New(store)
	cfg := httpapi.Config{Store: store, Queues: q, DB: db, Projector: proj, Media: ms, Progress: progress,
		Webhooks: webhook.Tester{Store: store, Queue: q}, Redeliver: webhook.Redeliverer{Store: store, Queue: q, CDNURL: cdn},
		Secrets: key, Plans: o.Plans, Log: quiet, Now: clk.Now,
		Playback: httpapi.Playback{Keys: playback.NewRing(ring, key, nil)},
		Origin:   httpapi.Origin{CDNURL: cdn, BaseURL: url + "/v1"},
		Uploads:  httpapi.Uploads{TusDir: filepath.Join(base, "media", ".tus"), Direct: direct},
		Limits:   httpapi.Limits{Ledger: limits}}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	api, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = api.Handler()
	k := &Kino{t: t, URL: url, BaseURL: url + "/v1", Store: store, Server: api, HTTP: srv, projector: proj, clock: clk,
		mediaDir: filepath.Join(base, "media")}

	run("projector", proj.Run)
	run("progress", progress.Follow)
	if o.Transcode {
		tc, err := transcoder.New(transcoder.Config{Store: store, Jobs: q, Media: ms, Progress: progress, Log: quiet,
			MaxAttempts: 2, Backoff: []time.Duration{10 * time.Millisecond}, AckWait: 30 * time.Second,
			Plans: o.Plans, User: user, Limits: ffmpeg.DefaultRLimits()})
		if err != nil {
			t.Fatal(err)
		}
		run("transcoder", tc.Run)
	}
	if o.Webhooks {
		fan, err := webhook.NewFanout(webhook.Config{Store: store, Queue: q, Log: quiet, CDNURL: cdn})
		if err != nil {
			t.Fatal(err)
		}
		d, err := webhook.NewDeliverer(webhook.Config{Store: store, Queue: q, Log: quiet, Secrets: key, AllowPrivate: true,
			Backoff: []time.Duration{50 * time.Millisecond}, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		run("webhook-fanout", fan.Run)
		run("webhook-delivery", d.Run)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		cancel()
		wg.Wait()
		_ = db.Close()
		_ = store.Close()
	})
	return k
}

// Clock is the API's clock.
func (k *Kino) Clock() *Clock { return k.clock }

// Settle waits (at most 10 s) until the read models include every event
// stored so far, so what was just written is what the API answers.
func (k *Kino) Settle() {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	last, err := k.Store.LastSeq(ctx)
	if err != nil {
		k.t.Fatal(err)
	}
	if err := k.projector.WaitFor(ctx, last); err != nil {
		k.t.Fatal(err)
	}
}

// Account creates an account on plan with one API key, as `kino accounts
// create` and `kino keys create` do, and returns the key.
func (k *Kino) Account(slug string, plan domain.Plan) string {
	k.t.Helper()
	ctx := context.Background()
	id := domain.StreamID{Aggregate: domain.AggAccount, ID: slug}
	if _, err := eventstore.Execute[domain.Account](ctx, k.Store, id, domain.CreateAccount{Slug: slug, Plan: plan}); err != nil {
		k.t.Fatal(err)
	}
	key, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		k.t.Fatal(err)
	}
	if _, err := eventstore.Execute[domain.Account](ctx, k.Store, id,
		domain.IssueKey{KeyID: k.Store.NewID(), Hash: domain.HashKey(key), Prefix: key[:len(domain.KeyPrefix)+4], Label: "test"}); err != nil {
		k.t.Fatal(err)
	}
	k.Settle()
	return key
}

// UploadsStreaming is how many multipart uploads are being received: each
// holds an upload slot and a file in the media directory's upload area.
func (k *Kino) UploadsStreaming() int {
	k.t.Helper()
	es, err := os.ReadDir(filepath.Join(k.mediaDir, ".incoming"))
	if err != nil {
		k.t.Fatal(err)
	}
	return len(es)
}
