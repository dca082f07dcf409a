package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// harness is one running kino service, wired exactly as `kino serve`
// wires it, on :0 with a random NATS port and a temp data dir.
type harness struct {
	t    testing.TB
	m    *Main
	data string
	url  string // http://127.0.0.1:port
	nats string
	now  *eventstoretest.Clock
	api  *httpapitest.Client // checks every request against docs/openapi.yaml

	// natsAuth is kino serve's own NATS credentials (tests reading the
	// stream directly); natsArgs what the CLI is given to reach this NATS.
	natsAuth eventstore.Auth
	natsArgs []string
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testPlans are the default plans with small upload limits, so size
// checks need only small files: 256 KiB, 512 MiB on business.
var testPlans = httpapitest.SmallPlans

func start(t testing.TB, data string, configure ...func(*Config)) *harness {
	t.Helper()
	clk := eventstoretest.NewClock(time.Date(2026, 11, 22, 12, 0, 10, 0, time.UTC))
	cfg := Config{
		Addr: "127.0.0.1:0", Data: data, NATSListen: "127.0.0.1:0",
		Log: quiet, Plans: testPlans(), Now: clk.Now,
	}
	for _, c := range configure {
		c(&cfg)
	}
	m := &Main{Config: cfg}
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		t.Fatal(err)
	}
	h := &harness{t: t, m: m, data: data, url: m.URL(), nats: m.NATSClientURL(), now: clk}
	// The CLI finds the embedded server's credentials under --data; with
	// an external NATS it is given serve's.
	h.natsAuth, h.natsArgs = cfg.NATSAuth, []string{"--nats", h.nats}
	if cfg.NATSAuth.CredsFile != "" {
		h.natsArgs = append(h.natsArgs, "--nats-creds", cfg.NATSAuth.CredsFile)
	}
	if m.nats != nil {
		h.natsAuth, h.natsArgs = m.nats.Auth(eventstore.RoleServe), []string{"--nats", h.nats, "--data", data}
	}
	h.api = httpapitest.NewClient(t, h.url)
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.m != nil {
		if err := h.m.Close(); err != nil {
			h.t.Errorf("close: %v", err)
		}
		h.m = nil
	}
}

// cli runs a kino subcommand against this instance's NATS.
func (h *harness) cli(args ...string) (string, error) {
	h.t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append(args, h.natsArgs...), &out, &errb)
	h.settle()
	if code != 0 {
		return out.String(), fmt.Errorf("exit %d: %s", code, errb.String())
	}
	return out.String(), nil
}

// settle waits until the service's read models include every stored
// event, so what the CLI just wrote is what the API answers.
func (h *harness) settle() {
	h.t.Helper()
	// The shared patience: a loaded machine running tests in parallel
	// may take more than seconds to project thousands of events.
	ctx, cancel := context.WithTimeout(context.Background(), eventstoretest.Patience)
	defer cancel()
	last, err := h.m.store.LastSeq(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.m.projector.WaitFor(ctx, last); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) mustCLI(args ...string) string {
	h.t.Helper()
	out, err := h.cli(args...)
	if err != nil {
		h.t.Fatalf("kino %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// account creates an account and a key through the CLI and returns the key.
func (h *harness) account(slug string, plan domain.Plan) string {
	h.t.Helper()
	h.mustCLI("accounts", "create", slug, "--plan", string(plan))
	return lastLine(h.mustCLI("keys", "create", slug, "--label", "test"))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// request, do and upload go through httpapitest's client, which checks
// every exchange against docs/openapi.yaml.
func (h *harness) request(method, path, key, contentType string, body io.Reader) response {
	h.t.Helper()
	r := h.api.Request(method, path, key, contentType, body)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

// do sends body (marshalled unless it is a string) as JSON.
func (h *harness) do(method, path, key string, body any) response {
	h.t.Helper()
	r := h.api.Do(method, path, key, body)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

// upload posts a multipart upload. A nil file omits the file field; an
// empty collection omits the collection field.
func (h *harness) upload(key, collection, filename string, file []byte) response {
	h.t.Helper()
	r := h.api.Upload(key, collection, filename, file)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

// wantError checks an error response: status and {error, message}.
func wantError(t *testing.T, r response, status int, label string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	m := r.json(t)
	if m["error"] != label {
		t.Fatalf("error %q, want %q: %s", m["error"], label, r.body)
	}
	msg, _ := m["message"].(string)
	if msg == "" || len(m) != 2 {
		t.Fatalf("error body must be exactly {error, message}: %s", r.body)
	}
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

// notAVideo is n bytes that start like an MP4 (so the upload's container
// check takes them) and hold nothing ffmpeg can read: an upload that is
// accepted and then FAILED.
func notAVideo(n int) []byte { return httpapitest.NotAVideo(n) }

var (
	// clip is a real 1 s 320x180 MP4 made by ffmpeg.
	clip = httpapitest.Clip
	// streamingUpload builds a multipart body of size bytes generated on
	// the fly, so the test itself holds no copy of the file.
	streamingUpload = httpapitest.StreamingUpload
)

// mediaEntries lists the video directories under <data>/media, and what
// lies in its incoming, tus and work directories.
func (h *harness) mediaEntries() (videos []string, incoming []string) {
	h.t.Helper()
	root := filepath.Join(h.data, "media")
	es, err := os.ReadDir(root)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range es {
		if e.Name() != ".incoming" && e.Name() != ".work" && e.Name() != ".tus" {
			videos = append(videos, e.Name())
		}
	}
	for _, dir := range []string{".incoming", ".work", ".tus"} {
		in, err := os.ReadDir(filepath.Join(root, dir))
		if errors.Is(err, fs.ErrNotExist) && dir == ".tus" {
			continue
		}
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range in {
			if dir == ".tus" && e.IsDir() { // one directory per node: what lies in it counts
				sub, err := os.ReadDir(filepath.Join(root, dir, e.Name()))
				if err != nil {
					h.t.Fatal(err)
				}
				for _, f := range sub {
					incoming = append(incoming, filepath.Join(dir, e.Name(), f.Name()))
				}
				continue
			}
			incoming = append(incoming, filepath.Join(dir, e.Name()))
		}
	}
	return videos, incoming
}

// countEvents counts the stored events matching a subject filter.
func countEvents(t *testing.T, h *harness, filter string) int {
	t.Helper()
	n := 0
	scan(t, h, []string{filter}, func(domain.Event, []byte) { n++ })
	return n
}

func scan(t *testing.T, h *harness, filters []string, fn func(domain.Event, []byte)) {
	t.Helper()
	store := eventstoretest.Open(t, h.nats, h.natsAuth)
	err := store.Scan(context.Background(), filters, func(e domain.Event) error {
		raw, err := domain.Encode(e)
		if err != nil {
			return err
		}
		fn(e, raw)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
