package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// CDNStore is a kind of media store the cdn measure compares: a kino
// started with it serves one segment of SegmentSize bytes at the URL
// Options.CDN returns.
type CDNStore struct {
	Name    string // "cached", "uncached", "s3 cached", "s3 uncached", "dir"
	Kind    string // --media: "nats", "s3" or "dir"
	CacheMB int    // --media-cache-mb
}

// CDNKino is a private kino of the cdn measure, as Options.CDN started it.
type CDNKino struct {
	Base      string // http://host:port
	Segment   string // the /cdn URL of a segment of SegmentSize bytes
	Large     string // the /cdn URL of a segment of LargeSegmentSize bytes
	Root      string // with --media dir: its media directory
	LargeFile string // the large segment's path under Root (slash-separated)
	Stop      func()
}

// SegmentSize is the size of the segment the object stores are compared
// on; LargeSegmentSize that of the one kino and nginx serve side by side
// (a 1080p segment of 4 s at 5 Mbit/s).
const (
	SegmentSize      = 1536 << 10
	LargeSegmentSize = 2_500_000
)

// cdnStores are the kinos of the cdn measure: the object stores (S3 when
// a bucket is given), then the directory, the baseline.
func cdnStores(o Options) []CDNStore {
	stores := []CDNStore{{"cached", "nats", 1024}, {"uncached", "nats", 0}}
	if o.S3 {
		stores = append(stores, CDNStore{"s3 cached", "s3", 1024}, CDNStore{"s3 uncached", "s3", 0})
	}
	return append(stores, CDNStore{"dir", "dir", 0})
}

// benchCDN measures /cdn serving one 1.5 MiB segment to 8 clients from a
// kino with --media nats, with its local copies (the default) and without,
// against the same from a kino with --media dir (goal >= 0.70), in MB/s.
func benchCDN(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
	stores := cdnStores(o)
	kinos := map[string]CDNKino{}
	for _, s := range stores {
		k, err := o.CDN(ctx, s)
		if err != nil {
			return nil, err
		}
		defer k.Stop()
		kinos[s.Name] = k
	}
	client := loadClient(8)
	say("cdn (%d runs of %s each, object store with and without local copies, and directory)", o.Runs, o.Duration)
	runs := map[string][]float64{}
	for i := 0; i < o.Runs; i++ {
		for _, s := range stores {
			rps, _, _, err := load(ctx, client, 8, o.Duration, func(int) (*http.Request, error) { return http.NewRequest("GET", kinos[s.Name].Segment, nil) })
			if err != nil {
				return nil, err
			}
			runs[s.Name] = append(runs[s.Name], math.Round(rps*SegmentSize/1e6*10)/10)
		}
	}
	var out []Result
	for _, s := range stores[:len(stores)-1] {
		r := Result{Measure: "/cdn 1.5 MiB segment, object store (" + s.Name + ") vs directory (8 clients)", Unit: "MB/s", Goal: ">= 0.70", HigherWin: true,
			KinoRuns: runs[s.Name], BaseRuns: runs["dir"]}
		r.finish(0.70)
		out = append(out, r)
	}
	out[0].Notes = "--media nats with --media-cache-mb 1024 (the default): the segment is read from NATS once, then from the local copy"
	out[1].Notes = "--media nats with --media-cache-mb 0: every read goes through NATS; see docs/performance.md"
	if o.S3 {
		out[2].Notes = "--media s3 with --media-cache-mb 1024: the segment is read from the bucket once, then from the local copy"
		out[3].Notes = "--media s3 with --media-cache-mb 0: every read is a GET of the bucket"
	}
	vs, err := benchNginx(ctx, o, kinos, say)
	if err != nil {
		return nil, err
	}
	return append(out, vs...), nil
}

// nginxConns is how many connections fetch the large segment at once from
// kino and from nginx.
const nginxConns = 200

// benchNginx measures kino's /cdn against Debian's nginx serving the same
// file from kino's media directory: 200 connections each fetching the
// large segment again and again, kino with --media dir and with the object
// stores' local copies, nginx with sendfile and 2 workers. Without nginx
// installed it says so and measures nothing.
func benchNginx(ctx context.Context, o Options, kinos map[string]CDNKino, say func(string, ...any)) ([]Result, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/nginx"); err != nil {
			say("cdn: nginx is not installed (apt-get install nginx-light): /cdn is not compared with it")
			return nil, nil
		}
	}
	names := []string{"dir", "cached"}
	if o.S3 {
		names = append(names, "s3 cached")
	}
	if o.Quick {
		names = names[:1] // one kino process: the test suite's time
	}
	if o.CDNProcess != nil {
		kinos = map[string]CDNKino{}
		for _, s := range cdnStores(o) {
			if !slices.Contains(names, s.Name) {
				continue
			}
			k, err := o.CDNProcess(ctx, s)
			if err != nil {
				return nil, err
			}
			defer k.Stop()
			kinos[s.Name] = k
		}
	}
	dir := kinos["dir"]
	base, stop, err := StartNginx(ctx, bin, dir.Root)
	if err != nil {
		return nil, err
	}
	defer stop()
	conns := nginxConns
	if o.Quick {
		conns = 8
	}
	say("cdn vs nginx (%d runs of %s each, %d connections, a %d-byte segment)", o.Runs, o.Duration, conns, LargeSegmentSize)
	client := loadClient(conns)
	fetch := func(url string) (float64, float64, error) {
		rps, _, p99, err := load(ctx, client, conns, o.Duration, func(int) (*http.Request, error) { return http.NewRequest("GET", url, nil) })
		return math.Round(rps*LargeSegmentSize/1e6*10) / 10, float64(p99.Microseconds()) / 1000, err
	}
	goURL := ""
	if o.FileServer != nil {
		argv, err := o.FileServer()
		if err != nil {
			return nil, err
		}
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		argv = append(argv, dir.Root, "--serve-addr", addr)
		stopGo, err := StartServer(ctx, "the Go file server", exec.Command(argv[0], argv[1:]...), addr)
		if err != nil {
			return nil, err
		}
		defer stopGo()
		goURL = "http://" + addr + "/" + dir.LargeFile
	}
	var nginxMBs, nginxP99, goMBs []float64
	kinoMBs, kinoP99 := map[string][]float64{}, map[string][]float64{}
	for i := 0; i < o.Runs; i++ {
		mbs, p99, err := fetch(base + "/" + dir.LargeFile)
		if err != nil {
			return nil, fmt.Errorf("nginx: %w", err)
		}
		nginxMBs, nginxP99 = append(nginxMBs, mbs), append(nginxP99, p99)
		if goURL != "" {
			mbs, _, err := fetch(goURL)
			if err != nil {
				return nil, fmt.Errorf("the Go file server: %w", err)
			}
			goMBs = append(goMBs, mbs)
		}
		for _, n := range names {
			mbs, p99, err := fetch(kinos[n].Large)
			if err != nil {
				return nil, err
			}
			kinoMBs[n], kinoP99[n] = append(kinoMBs[n], mbs), append(kinoP99[n], p99)
		}
	}
	var out []Result
	for _, n := range names {
		r := Result{Measure: fmt.Sprintf("/cdn 2.5 MB segment, kino (%s) vs nginx (%d connections)", n, conns), Unit: "MB/s",
			Goal: ">= 0.95, p99 <= 1.5x nginx's", HigherWin: true, KinoRuns: kinoMBs[n], BaseRuns: nginxMBs}
		r.finish(0.95)
		p99, np99 := median(kinoP99[n]), median(nginxP99)
		r.Met = r.Met && p99 <= 1.5*np99
		r.Notes = fmt.Sprintf("p99 kino %.0f ms (runs %s), nginx %.0f ms (runs %s): %.2fx", p99, joinFloats(kinoP99[n]), np99, joinFloats(nginxP99), p99/np99)
		if len(goMBs) > 0 {
			r.Notes += fmt.Sprintf("; a bare Go file server process (net/http.FileServer, sendfile): %.0f MB/s (runs %s), %.2f of nginx, kino %.2f of it",
				median(goMBs), joinFloats(goMBs), median(goMBs)/r.Baseline, r.Kino/median(goMBs))
		}
		out = append(out, r)
	}
	return out, nil
}

// StartNginx runs Debian's nginx (bin) serving root on a loopback port as
// a plain static file server: 2 workers, sendfile on, no access log, keep-
// alive without a request limit. It returns the base URL and a function
// stopping it.
func StartNginx(ctx context.Context, bin, root string) (url string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "kino-bench-nginx-")
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, func(), error) {
		os.RemoveAll(dir)
		return "", nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		return fail(err)
	}
	user := "" // a root master would hand the files to nobody, who cannot read kino's directories
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	conf := fmt.Sprintf(`worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
%[2]s
events { worker_connections 1024; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 1000000;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	types { video/iso.segment m4s; video/mp2t ts; }
	server { listen %[3]s; root %[4]s; }
}
`, dir, user, addr, root)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o600); err != nil {
		return fail(err)
	}
	stopNginx, err := StartServer(ctx, "nginx", exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;"), addr)
	if err != nil {
		return fail(err)
	}
	return "http://" + addr, func() { stopNginx(); os.RemoveAll(dir) }, nil
}

// FreeAddr is a loopback address with a port free a moment ago, for a
// server process to listen on.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// StartServer starts cmd, a server that listens on addr, and returns once
// it accepts connections, with a function stopping it (SIGTERM). A server
// that exits first is an error with what it wrote on stderr.
func StartServer(ctx context.Context, name string, cmd *exec.Cmd, addr string) (stop func(), err error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return stop, nil
		}
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("%s exited: %v: %s", name, err, stderr.String())
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New(name + " did not listen within 10 s: " + stderr.String())
		}
	}
}

// ServeFiles serves dir with a bare net/http file server (sendfile, no
// middleware) on addr until ctx ends: kino bench --serve-files, the
// ceiling of a Go server that the cdn measure runs beside kino and nginx.
func ServeFiles(ctx context.Context, dir, addr string) error {
	srv := &http.Server{Addr: addr, Handler: http.FileServer(http.Dir(dir))}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
