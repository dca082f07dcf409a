package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/benchstore"
	"github.com/kino-video/kino/transport/accounts"
)

// A Result is one line of `kino bench`: kino's figure beside a baseline
// measured in the same run on the same machine (medians of the runs).
type Result struct {
	Measure   string    `json:"measure"`
	Unit      string    `json:"unit"`
	Kino      float64   `json:"kino"`
	Baseline  float64   `json:"baseline"`
	Ratio     float64   `json:"ratio"` // kino / baseline
	Goal      string    `json:"goal"`
	Met       bool      `json:"met"`
	KinoRuns  []float64 `json:"kinoRuns"`
	BaseRuns  []float64 `json:"baselineRuns"`
	Notes     string    `json:"notes,omitempty"`
	HigherWin bool      `json:"-"`
}

// Options choose what Run measures and how long.
type Options struct {
	Quick    bool          // tiny sizes and short runs, for CI
	Only     []string      // reads, writes, uploads, processing, replay, cdn, tus; empty: all
	Runs     int           // runs of each measure (the median is reported)
	Duration time.Duration // length of each load run
	UploadMB int           // size of the upload measured, in MiB
	// Start starts a private kino on the data directory dir with plans,
	// running transcoders transcode jobs at once (0: none).
	Start func(ctx context.Context, dir string, plans domain.Plans, transcoders int) (Kino, error)
	// CDN starts a private kino with the media store s holding a segment
	// of SegmentSize bytes and one of LargeSegmentSize.
	CDN func(ctx context.Context, s CDNStore) (CDNKino, error)
	// CDNProcess is CDN served by a kino process of its own, as a
	// deployment runs it, for the comparison with nginx (also a process
	// of its own): in-process, the server would share its runtime with
	// the bench's 200 client connections. nil: CDN's.
	CDNProcess func(ctx context.Context, s CDNStore) (CDNKino, error)
	// FileServer is the command (and arguments before the directory)
	// that runs ServeFiles as a process of its own, the Go ceiling beside
	// kino and nginx; nil: not measured.
	FileServer func() ([]string, error)
	// S3: a bucket was given (kino bench --s3-*): the cdn measure
	// compares --media s3 with the directory too.
	S3 bool
	// ReportDir is where measures that write more than a table (quality:
	// its per-rung table and plot) write it; "" writes nothing.
	ReportDir string
	// More are measures the caller adds, by name (kino bench's outputs and
	// fastpath); Run runs them after its own, in name order.
	More map[string]Measure
}

// Measure is one measure of Options.More: o as Run uses it for heavy
// measures (at most 3 runs), say to report progress.
type Measure func(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error)

// Kino is a running kino service, as the caller started it.
type Kino interface {
	URL() string              // http://host:port of its API
	Store() *eventstore.Store // its event store
	// CatchUp returns once the read models include every stored event.
	CatchUp(ctx context.Context) error
	Close() error
}

// Measures are the names Options.Only takes.
var Measures = []string{"reads", "writes", "uploads", "processing", "replay", "cdn", "tus", "search"}

// Describe is the help text of kino bench.
const Describe = `bench starts a private kino (embedded NATS, temp data dir) and measures it
beside a baseline run in the same process on the same machine: every figure
is a median of several runs, with its ratio to the baseline and the goal.

  reads    GET /v1/videos/{id} (goal >= 0.80, p99 < 5 ms) and ?limit=50 (goal >= 0.60) vs a bare net/http handler
  writes   POST /v1/collections, 8 clients, vs raw JetStream appends with a per-subject expectation
           (goal >= 0.50, p99 < 10 ms); also beside a bare handler doing one raw append per POST
  uploads     one large upload vs a bare handler copying the body to disk (goal >= 0.70, < 64 MiB RSS growth)
  processing  a 30 s 1080p clip, upload -> COMPLETED, vs the same ffmpeg commands bare (goal <= 1.05)
              and vs one ffmpeg per rendition in sequence (goal <= 0.80);
              the ladder in two lanes (kino's split for heavy ladders) vs one process (goal <= 1.10)
  replay      rebuild of 250k/500k/1M synthetic events vs a raw ordered consumer into bbolt
              (goal >= 0.70), and linear growth of the rebuild time
  cdn         a 1.5 MiB segment from /cdn with --media nats (and s3, given --s3-*) vs --media dir (goal >= 0.70);
              a 2.5 MB segment from /cdn (--media dir, and the object stores' local copies) vs Debian's
              nginx serving the same file (sendfile, 2 workers), 200 connections (goal >= 0.95, p99 <= 1.5x)
  tus         the same file uploaded with tus in 8 MiB chunks vs one multipart upload (goal >= 0.90)
              and vs a bare handler copying the body to disk (goal >= 0.70)
  outputs     the ladder with the storyboard (its own pass) and the download remux,
              vs the ladder alone, on a 20 s 1080p clip (goal <= 1.10 together)
  fastpath    the ladder of a 20 s 1080p H.264/AAC source within the top rung's cap, its top rung
              copied, vs the same ladder fully encoded (ratio: lower is faster)
  quality     a synthetic corpus of six 10 s 1080p clips (a static screen to high detail), each
              encoded by kino's ladder, kino's former fixed-bitrate ladder and PeerTube's default
              VOD profile: bytes, SSIM and PSNR per rung, encode CPU; goals: bytes <= 0.70 of the
              fixed ladder (median), <= 1.05 on every clip, SSIM at most 0.005 below per rung,
              <= 0.90 of PeerTube's (median) at SSIM >= its own, CPU <= 1.10; writes quality.md,
              quality.json and quality.svg (bytes against SSIM) under --report-dir

--quick uses tiny sizes and short runs (seconds), so the bench is part of the test suite.`

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// Table writes results as a Markdown table, then their notes.
func Table(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "| measure\t| kino\t| baseline\t| ratio\t| goal\t| met?\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|")
	for _, r := range rs {
		met := "no"
		if r.Met {
			met = "yes"
		}
		fmt.Fprintf(tw, "| %s\t| %s %s\t| %s %s\t| %s\t| %s\t| %s\t|\n", r.Measure, human(r.Kino), r.Unit, human(r.Baseline), r.Unit, human(r.Ratio), r.Goal, met)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rs {
		if r.Notes != "" {
			fmt.Fprintf(w, "- %s: %s\n", r.Measure, r.Notes)
		}
	}
	return nil
}

// human is x for a reader: whole above 100, two decimals below, four
// for a small difference (an SSIM's is a few thousandths).
func human(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	case x != 0 && math.Abs(x) < 0.1:
		return strconv.FormatFloat(x, 'f', 4, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

func wants(o Options, name string) bool {
	return len(o.Only) == 0 || slices.Contains(o.Only, name)
}

// Run starts a private kino (o.Start) and runs the chosen measures,
// reporting what it does on progress.
func Run(ctx context.Context, o Options, progress io.Writer) ([]Result, error) {
	if o.Quick {
		o.Runs, o.Duration, o.UploadMB = 1, 150*time.Millisecond, 8
	}
	for _, name := range o.Only {
		if !slices.Contains(Measures, name) && o.More[name] == nil {
			return nil, fmt.Errorf("--only: unknown measure %q (reads, writes, uploads, processing, replay, cdn, tus, search, outputs, fastpath, playable, quality)", name)
		}
	}
	dir, err := os.MkdirTemp("", "kino-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	m, key, err := startBenchKino(ctx, o, dir, 0)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	say := func(f string, a ...any) { fmt.Fprintf(progress, "bench: "+f+"\n", a...) }
	var results []Result
	if wants(o, "reads") {
		say("reads (%d runs of %s each, kino and baseline)", o.Runs, o.Duration)
		rs, err := benchReads(ctx, m, key, o)
		if err != nil {
			return nil, fmt.Errorf("reads: %w", err)
		}
		results = append(results, rs...)
	}
	if wants(o, "writes") {
		say("writes (%d runs of %s each)", o.Runs, o.Duration)
		r, err := benchWrites(ctx, m, key, o)
		if err != nil {
			return nil, fmt.Errorf("writes: %w", err)
		}
		results = append(results, r)
	}
	if wants(o, "uploads") {
		say("uploads (%d runs of %d MiB)", o.Runs, o.UploadMB)
		rs, err := benchUploads(ctx, m, key, o, dir)
		if err != nil {
			return nil, fmt.Errorf("uploads: %w", err)
		}
		results = append(results, rs...)
	}
	heavy := o
	heavy.Runs = min(o.Runs, 3) // minutes per run: three runs give the median
	if wants(o, "processing") {
		rs, err := benchProcessing(ctx, heavy, say)
		if err != nil {
			return nil, fmt.Errorf("processing: %w", err)
		}
		results = append(results, rs...)
	}
	if wants(o, "replay") {
		rs, err := benchReplay(ctx, heavy, say)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		results = append(results, rs...)
	}
	if wants(o, "cdn") {
		rs, err := benchCDN(ctx, o, say)
		if err != nil {
			return nil, fmt.Errorf("cdn: %w", err)
		}
		results = append(results, rs...)
	}
	if wants(o, "tus") {
		say("tus (%d runs of %d MiB, tus and multipart)", o.Runs, o.UploadMB)
		rs, err := benchTus(ctx, m, key, o, dir)
		if err != nil {
			return nil, fmt.Errorf("tus: %w", err)
		}
		results = append(results, rs...)
	}
	if wants(o, "search") {
		rs, err := benchSearch(ctx, m, key, o, say)
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		results = append(results, rs...)
	}
	for _, name := range slices.Sorted(maps.Keys(o.More)) {
		if wants(o, name) {
			rs, err := o.More[name](ctx, heavy, say)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			results = append(results, rs...)
		}
	}
	return results, nil
}

// startBenchKino starts a private kino on dir (o.Start) with limits that
// never get in the way, and a key of a business account.
func startBenchKino(ctx context.Context, o Options, dir string, transcoders int) (Kino, string, error) {
	plans := domain.DefaultPlans()
	for name, l := range plans {
		l.RequestsPerMinute, l.MaxUploadBytes = math.MaxInt32, 1<<40
		plans[name] = l
	}
	m, err := o.Start(ctx, dir, plans, transcoders)
	if err != nil {
		return nil, "", err
	}
	key, err := benchAccount(ctx, m)
	if err != nil {
		m.Close()
		return nil, "", err
	}
	return m, key, nil
}

func benchAccount(ctx context.Context, m Kino) (string, error) {
	if _, err := eventstore.Execute[domain.Account](ctx, m.Store(), domain.AccountStream("bench"), domain.CreateAccount{Slug: "bench", Plan: domain.PlanBusiness}); err != nil {
		return "", err
	}
	key, _, err := accounts.IssueKey(ctx, m.Store(), "bench", "bench")
	if err != nil {
		return "", err
	}
	return key, m.CatchUp(ctx)
}

func loadClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
}

// load runs clients goroutines sending req() for d and returns requests
// per second and the 50th and 99th percentile latencies. Any non-2xx
// answer fails the run. Each client starts requests until d has passed
// and lets the one in flight finish, so every client completes at least
// one and a slow first request (a cold cache on a loaded machine) is
// measured, not cut off.
func load(ctx context.Context, client *http.Client, clients int, d time.Duration, req func(i int) (*http.Request, error)) (rps float64, p50, p99 time.Duration, err error) {
	var mu sync.Mutex
	var lat []time.Duration
	var failure atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var mine []time.Duration
			buf := make([]byte, 256<<10) // large reads: the client's syscalls stay out of the way of the server's
			for i := 0; ctx.Err() == nil && (i == 0 || time.Since(start) < d); i++ {
				r, err := req(c*1_000_000 + i)
				if err != nil {
					failure.CompareAndSwap(nil, err)
					return
				}
				t0 := time.Now()
				resp, err := client.Do(r.WithContext(ctx))
				if err != nil {
					if ctx.Err() == nil {
						failure.CompareAndSwap(nil, err)
					}
					break
				}
				_, _ = io.CopyBuffer(discard{}, resp.Body, buf)
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					failure.CompareAndSwap(nil, fmt.Errorf("%s %s: HTTP %d", r.Method, r.URL.Path, resp.StatusCode))
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failure.Load(); f != nil {
		return 0, 0, 0, f.(error)
	}
	if len(lat) == 0 {
		return 0, 0, 0, fmt.Errorf("no request completed in %s", d)
	}
	slices.Sort(lat)
	return float64(len(lat)) / elapsed.Seconds(), lat[len(lat)/2], lat[len(lat)*99/100], nil
}

// BareJSON serves body as JSON, encoded per request as kino does: the ceiling
// of a Go HTTP server answering the same bytes.
func BareJSON(body []byte) (url string, stop func(), err error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}

func benchReads(ctx context.Context, m Kino, key string, o Options) ([]Result, error) {
	api := apiOf(m, key)
	if code, _, err := api.call(ctx, "POST", "/v1/collections", `{"slug":"bench","name":"Bench"}`); err != nil || code != 201 {
		return nil, fmt.Errorf("create collection: %d %v", code, err)
	}
	// 60 videos with real records (the files' contents do not matter here).
	var id string
	for i := 0; i < 60; i++ {
		var err error
		if id, err = api.upload(ctx, "bench", "clip.mp4", bytes.NewReader(make([]byte, 1024)), 1024); err != nil {
			return nil, err
		}
	}
	var out []Result
	for _, c := range []struct {
		name, path string
		goal       float64
		p99        float64 // µs; 0: no goal
	}{
		{"GET /v1/videos/{id}", "/v1/videos/" + id, 0.80, 5000},
		{"GET /v1/videos?limit=50", "/v1/videos?limit=50", 0.60, 0},
	} {
		_, body, err := api.call(ctx, "GET", c.path, "")
		if err != nil {
			return nil, err
		}
		bareURL, stop, err := BareJSON(body)
		if err != nil {
			return nil, err
		}
		r := Result{Measure: c.name + " (32 clients)", Unit: "req/s", Goal: fmt.Sprintf(">= %.2f", c.goal), HigherWin: true}
		if c.p99 > 0 {
			r.Goal += fmt.Sprintf(", p99 < %.0f ms", c.p99/1000)
		}
		var p50s, p99s, bareP99s []float64
		client := loadClient(32)
		for i := 0; i < o.Runs; i++ {
			rps, p50, p99, err := load(ctx, client, 32, o.Duration, func(int) (*http.Request, error) {
				req, err := http.NewRequest("GET", m.URL()+c.path, nil)
				if err == nil {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				return req, err
			})
			if err != nil {
				stop()
				return nil, err
			}
			r.KinoRuns, p50s, p99s = append(r.KinoRuns, rps), append(p50s, float64(p50.Microseconds())), append(p99s, float64(p99.Microseconds()))
			brps, _, bp99, err := load(ctx, client, 32, o.Duration, func(int) (*http.Request, error) { return http.NewRequest("GET", bareURL, nil) })
			if err != nil {
				stop()
				return nil, err
			}
			r.BaseRuns, bareP99s = append(r.BaseRuns, brps), append(bareP99s, float64(bp99.Microseconds()))
		}
		stop()
		r.finish(c.goal)
		if c.p99 > 0 {
			r.Met = r.Met && median(p99s) < c.p99
		}
		r.Notes = fmt.Sprintf("kino p50 %.0f µs, p99 %.0f µs; bare handler p99 %.0f µs", median(p50s), median(p99s), median(bareP99s))
		out = append(out, r)
	}
	return out, nil
}

func benchWrites(ctx context.Context, m Kino, key string, o Options) (Result, error) {
	const clients = 8
	r := Result{Measure: "POST /v1/collections (8 clients)", Unit: "cmd/s", Goal: ">= 0.50", HigherWin: true}
	client := loadClient(clients)
	var n atomic.Int64
	post := func(base string) func(int) (*http.Request, error) {
		return func(int) (*http.Request, error) {
			body := fmt.Sprintf(`{"slug":"c%d","name":"Collection"}`, n.Add(1))
			req, err := http.NewRequest("POST", base+"/v1/collections", strings.NewReader(body))
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
			}
			return req, err
		}
	}
	bareURL, stop, err := BareAppend(ctx, m.Store())
	if err != nil {
		return r, err
	}
	defer stop()
	var p99s, bare []float64
	for i := 0; i < o.Runs; i++ {
		rps, _, p99, err := load(ctx, client, clients, o.Duration, post(m.URL()))
		if err != nil {
			return r, err
		}
		r.KinoRuns, p99s = append(r.KinoRuns, rps), append(p99s, float64(p99.Microseconds()))
		base, err := rawAppends(ctx, m.Store(), clients, o.Duration)
		if err != nil {
			return r, err
		}
		r.BaseRuns = append(r.BaseRuns, base)
		hrps, _, _, err := load(ctx, client, clients, o.Duration, post(bareURL))
		if err != nil {
			return r, err
		}
		bare = append(bare, hrps)
	}
	r.finish(0.50)
	p99 := median(p99s)
	r.Met = r.Met && p99 < 10_000
	r.Goal = ">= 0.50, p99 < 10 ms"
	r.Notes = fmt.Sprintf("kino p99 %.0f µs (runs %s); a bare handler answering each POST with one raw append (HTTP and the append, nothing else): %.0f cmd/s (runs %s), kino %.2f of it",
		p99, joinFloats(p99s), median(bare), joinFloats(bare), median(r.KinoRuns)/median(bare))
	return r, nil
}

// BareAppend is the ceiling of a write through HTTP: a net/http handler
// that decodes a collection's JSON body, appends it as one message with a
// per-subject expectation to a raw stream beside kino's, and answers 201
// with JSON, as kino does, but with no authentication, load, decision,
// read model or log.
func BareAppend(ctx context.Context, s *eventstore.Store) (url string, stop func(), err error) {
	raw, err := benchstore.OpenRawStream(ctx, s, "KINO_BENCH_HTTP")
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = raw.Delete(context.WithoutCancel(ctx))
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Slug, Name string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !domain.ValidSlug(body.Slug) {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		data, _ := json.Marshal(body)
		if _, err := raw.Publish(r.Context(), "acme."+body.Slug+".CollectionCreated", 0, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(body)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close(); _ = raw.Delete(context.WithoutCancel(ctx)) }, nil
}

// rawAppends is the write floor: bare JetStream appends of a 200-byte body
// with a per-subject expectation, from clients goroutines, each on its own
// subject, into a stream beside kino's on the same server.
func rawAppends(ctx context.Context, s *eventstore.Store, clients int, d time.Duration) (float64, error) {
	raw, err := benchstore.OpenRawStream(ctx, s, "KINO_BENCH_RAW")
	if err != nil {
		return 0, err
	}
	defer raw.Delete(context.WithoutCancel(ctx))
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	body := bytes.Repeat([]byte("x"), 200)
	var total atomic.Int64
	var failure atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			subject := fmt.Sprintf("client%d.Appended", c)
			var last uint64
			for ctx.Err() == nil {
				seq, err := raw.Publish(ctx, subject, last, body)
				if err != nil {
					if ctx.Err() == nil {
						failure.CompareAndSwap(nil, err)
					}
					return
				}
				last = seq
				total.Add(1)
			}
		}(c)
	}
	wg.Wait()
	if f := failure.Load(); f != nil {
		return 0, f.(error)
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

func benchUploads(ctx context.Context, m Kino, key string, o Options, dir string) ([]Result, error) {
	api := apiOf(m, key)
	if code, _, err := api.call(ctx, "POST", "/v1/collections", `{"slug":"uploads","name":"Uploads"}`); err != nil || code != 201 {
		return nil, fmt.Errorf("create collection: %d %v", code, err)
	}
	size := int64(o.UploadMB) << 20
	speed := Result{Measure: fmt.Sprintf("upload of %d MiB", o.UploadMB), Unit: "MB/s", Goal: ">= 0.70", HigherWin: true}
	growth := Result{Measure: fmt.Sprintf("RSS growth during a %d MiB upload", o.UploadMB), Unit: "MiB", Goal: "< 64 MiB"}
	bareURL, stop, err := BareCopy(filepath.Join(dir, "bare"))
	if err != nil {
		return nil, err
	}
	defer stop()
	for i := 0; i < o.Runs; i++ {
		runtime.GC()
		before := resetPeakRSS()
		t0 := time.Now()
		id, err := api.upload(ctx, "uploads", "big.mp4", &noise{}, size)
		if err != nil {
			return nil, err
		}
		speed.KinoRuns = append(speed.KinoRuns, float64(size)/1e6/time.Since(t0).Seconds())
		growth.KinoRuns = append(growth.KinoRuns, float64(peakRSS()-before)/(1<<20))
		if code, _, err := api.call(ctx, "DELETE", "/v1/videos/"+id, ""); err != nil || code != 200 {
			return nil, fmt.Errorf("delete: %d %v", code, err)
		}
		mbps, err := api.bareUpload(ctx, bareURL, size)
		if err != nil {
			return nil, err
		}
		speed.BaseRuns = append(speed.BaseRuns, mbps)
	}
	speed.finish(0.70)
	growth.Kino = median(growth.KinoRuns)
	growth.Met = growth.Kino < 64
	growth.Notes = "peak resident set of the whole bench process (server and client) above its level before the upload"
	return []Result{speed, growth}, nil
}

// bareUpload sends size bytes of noise to a BareCopy handler, as a raw
// body with a Content-Length, and returns the MB/s.
func (a benchAPI) bareUpload(ctx context.Context, url string, size int64) (float64, error) {
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", url, io.LimitReader(&noise{}, size))
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return 0, fmt.Errorf("bare upload: HTTP %d", resp.StatusCode)
	}
	return float64(size) / 1e6 / time.Since(t0).Seconds(), nil
}

// finish sets the medians, the ratio and whether the goal is met.
func (r *Result) finish(goal float64) {
	r.Kino, r.Baseline = median(r.KinoRuns), median(r.BaseRuns)
	if r.Baseline > 0 {
		r.Ratio = r.Kino / r.Baseline
	}
	r.Met = r.Ratio >= goal
}

// BareCopy is the upload floor: a handler that copies the request body to
// a file and removes it.
func BareCopy(dir string) (string, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.CreateTemp(dir, "bare-*")
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if _, err := io.Copy(f, r.Body); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/", func() { srv.Close() }, nil
}

// discard is io.Discard without its ReadFrom, so io.CopyBuffer reads
// with the buffer it is given (io.Discard reads 8 KiB at a time).
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// noise is an endless source of bytes that look like a video's: one
// random MiB over and over, with no long run of one byte. (Zeros are a
// worst case of Go's multipart parser, which looks back through its whole
// buffer for a line break, and no video is made of them.)
type noise struct{ at int }

var noiseBlock = func() []byte {
	b := make([]byte, 1<<20)
	_, _ = rand.Read(b)
	return b
}()

func (n *noise) Read(p []byte) (int, error) {
	c := copy(p, noiseBlock[n.at:])
	n.at = (n.at + c) % len(noiseBlock)
	return c, nil
}

// resetPeakRSS resets the kernel's peak-RSS mark (Linux) and returns the
// current resident set in bytes.
func resetPeakRSS() int64 {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return procStatus("VmRSS")
}

func peakRSS() int64 { return procStatus("VmHWM") }

func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// benchAPI is a minimal client for the bench's own setup calls.
type benchAPI struct {
	base, key string
	client    *http.Client
}

func apiOf(m Kino, key string) benchAPI {
	return benchAPI{base: m.URL(), key: key, client: loadClient(4)}
}

func (a benchAPI) call(ctx context.Context, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// MP4Box is an ISO-BMFF ftyp box: the bench's uploads are never
// transcoded, but their first bytes must pass the upload's container check.
var MP4Box = []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")

// upload streams size bytes (an mp4 box, then r) as a multipart upload and
// returns the id.
func (a benchAPI) upload(ctx context.Context, coll, name string, r io.Reader, size int64) (string, error) {
	// The envelope is written ahead, so the request has a Content-Length
	// (as curl's and browsers' do) and the file's bytes go from r to the
	// connection without a pipe in between.
	var env bytes.Buffer
	mw := multipart.NewWriter(&env)
	_ = mw.WriteField("collection", coll)
	if _, err := mw.CreateFormFile("file", name); err != nil {
		return "", err
	}
	head := bytes.Clone(env.Bytes())
	env.Reset()
	_ = mw.Close()
	file := io.LimitReader(io.MultiReader(bytes.NewReader(MP4Box), r), size)
	req, err := http.NewRequestWithContext(ctx, "POST", a.base+"/v1/videos", io.MultiReader(bytes.NewReader(head), file, &env))
	if err != nil {
		return "", err
	}
	req.ContentLength = int64(len(head)) + size + int64(env.Len())
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := a.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	var out struct {
		Video struct {
			ID string `json:"id"`
		} `json:"video"`
	}
	if resp.StatusCode != 202 || json.Unmarshal(b, &out) != nil {
		return "", fmt.Errorf("upload: HTTP %d: %s", resp.StatusCode, b)
	}
	return out.Video.ID, nil
}
