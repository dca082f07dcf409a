package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kino-video/kino/cmd/kino/bench"
	"github.com/kino-video/kino/domain"
)

// tusTools finds node and tus-js-client (installed by `just
// ensure-browser`): skipped without them on a workstation, a failure
// under CI.
func tusTools(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs(filepath.Join("testdata", "browser"))
	node, err := exec.LookPath("node")
	var missing []string
	if err != nil {
		missing = append(missing, "node")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "tus-js-client")); err != nil {
		missing = append(missing, "node_modules/tus-js-client")
	}
	if len(missing) > 0 {
		msg := "tus test needs " + strings.Join(missing, ", ") + ": run `just ensure-browser`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, dir
}

// tusEvent is a line printed by testdata/browser/tus.mjs.
type tusEvent struct {
	Event   string `json:"event"`
	URL     string `json:"url"`
	Bytes   int64  `json:"bytes"`
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// runTus runs tus.mjs with opts and returns its last event (success,
// stopped or error).
func runTus(t *testing.T, node, dir string, opts map[string]any) tusEvent {
	t.Helper()
	b, _ := json.Marshal(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "tus.mjs", string(b))
	cmd.Dir = dir
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var ev tusEvent
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); jerr != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("tus.mjs: %v %v\n%s\n%s", err, jerr, out, stderr)
	}
	return ev
}

// cutProxy forwards TCP connections to target and, once, cuts the
// connection that carries the client's cutAt-th byte. It counts the bytes
// clients sent.
type cutProxy struct {
	ln     net.Listener
	target string
	cutAt  int64

	mu   sync.Mutex
	sent int64
	cut  bool
}

func newCutProxy(t *testing.T, target string, cutAt int64) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cutAt: cutAt}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *cutProxy) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(c, up); c.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cutNow := !p.cut && p.sent+int64(n) >= p.cutAt
			if cutNow {
				n = int(p.cutAt - p.sent)
				p.cut = true
			}
			p.sent += int64(n)
			p.mu.Unlock()
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
			if cutNow {
				return // both sides closed: the connection dropped mid-request
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *cutProxy) stats() (sent int64, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent, p.cut
}

// A tus-js-client upload in chunks whose connection drops in the middle
// resumes from the server's offset (it does not start over) and the video
// ends COMPLETED.
func TestTusResumesAfterDroppedConnection(t *testing.T) {
	t.Parallel()
	node, dir := tusTools(t)
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	data := makeClip(t, "clip.mp4", 320, 180, 3, true)
	file := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	cutAt := size * 6 / 10
	proxy := newCutProxy(t, strings.TrimPrefix(h.url, "http://"), cutAt)
	ev := runTus(t, node, dir, map[string]any{"file": file, "endpoint": proxy.url() + "/v1/uploads/tus", "key": key,
		"collection": "main", "chunkSize": size / 4})
	if ev.Event != "success" {
		t.Fatalf("tus upload: %+v", ev)
	}
	sent, cut := proxy.stats()
	if !cut {
		t.Fatal("the proxy never cut the upload")
	}
	// Starting over would have sent cutAt + size bytes at least.
	if sent >= cutAt+size {
		t.Fatalf("the client sent %d bytes for a %d-byte file cut at %d: it started over", sent, size, cutAt)
	}
	id := ev.URL[strings.LastIndex(ev.URL, "/")+1:]
	v := h.waitStatus(key, id, domain.StatusCompleted)
	if v["filename"] != "clip.mp4" || v["originalSize"] != float64(size) {
		t.Fatalf("video: %v", v)
	}
	t.Logf("%d-byte file, cut at %d, %d bytes sent in all", size, cutAt, sent)
}

// A direct upload URL takes one upload from tus-js-client without an API
// key, then refuses a second; an expired one is refused.
func TestDirectUploadWithTusJSClient(t *testing.T) {
	t.Parallel()
	node, dir := tusTools(t)
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	file := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(file, clip(t), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.do("POST", "/v1/uploads", key, map[string]any{"collection": "main"})
	wantStatus(t, r, 201)
	d := r.json(t)
	ev := runTus(t, node, dir, map[string]any{"file": file, "endpoint": d["url"], "chunkSize": 64 << 10})
	if ev.Event != "success" || !strings.HasSuffix(ev.URL, "/"+d["id"].(string)) {
		t.Fatalf("direct upload: %+v", ev)
	}
	wantStatus(t, h.do("GET", "/v1/videos/"+d["id"].(string), key, nil), 200)

	// A client that lost the last answer resumes the upload's URL: it
	// learns the upload is complete, and no second video is made.
	again := runTus(t, node, dir, map[string]any{"file": file, "endpoint": d["url"], "uploadUrl": ev.URL, "chunkSize": 64 << 10})
	if again.Event != "success" || again.URL != ev.URL {
		t.Fatalf("resuming a finished upload: %+v", again)
	}
	if list := h.do("GET", "/v1/videos", key, nil).json(t)["videos"].([]any); len(list) != 1 {
		t.Fatalf("resuming a finished upload made %d videos", len(list))
	}

	ev = runTus(t, node, dir, map[string]any{"file": file, "endpoint": d["url"], "chunkSize": 64 << 10, "retries": []int{}})
	if ev.Event != "error" || ev.Status != 409 {
		t.Fatalf("second upload on a used URL: %+v", ev)
	}

	r = h.do("POST", "/v1/uploads", key, map[string]any{"collection": "main", "expiresIn": 60})
	wantStatus(t, r, 201)
	h.now.Set(h.now.Now().Add(2 * time.Minute))
	ev = runTus(t, node, dir, map[string]any{"file": file, "endpoint": r.json(t)["url"], "chunkSize": 64 << 10, "retries": []int{}})
	if ev.Event != "error" || ev.Status != 410 {
		t.Fatalf("upload on an expired URL: %+v", ev)
	}
}

// kino restarted in the middle of a tus upload (the real binary, the same
// data directory): the upload resumes where the server had it and the
// video ends COMPLETED.
func TestTusResumesAcrossKinoRestart(t *testing.T) {
	t.Parallel()
	node, ndir := tusTools(t)
	dir := t.TempDir()
	passable(t, dir)
	bin := buildKino(t)
	data := makeClip(t, "clip.mp4", 320, 180, 3, true)
	file := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := []string{"serve", "--dev", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0"}
	k := startKino(t, ctx, bin, args...)
	key := k.devKey(t, ctx)
	chunk := int64(len(data)) / 5
	ev := runTus(t, node, ndir, map[string]any{"file": file, "endpoint": "http://" + k.addr + "/v1/uploads/tus", "key": key,
		"collection": "default", "chunkSize": chunk, "stopAfter": 2 * chunk})
	if ev.Event != "stopped" {
		t.Fatalf("first half: %+v", ev)
	}
	path := ev.URL[strings.Index(ev.URL, "/v1/"):]
	id := path[strings.LastIndex(path, "/")+1:]

	if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Wait(); err != nil {
		t.Fatalf("kino serve after SIGTERM: %v", err)
	}
	k = startKino(t, ctx, bin, args...)
	base := "http://" + k.addr
	ev = runTus(t, node, ndir, map[string]any{"file": file, "endpoint": base + "/v1/uploads/tus", "uploadUrl": base + path,
		"key": key, "collection": "default", "chunkSize": chunk})
	if ev.Event != "success" || !strings.HasSuffix(ev.URL, "/"+id) {
		t.Fatalf("resumed upload: %+v", ev)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", base+"/v1/videos/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Status       string
			OriginalSize int64
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET video: %d %v", resp.StatusCode, err)
		}
		if v.Status == string(domain.StatusCompleted) {
			if v.OriginalSize != int64(len(data)) {
				t.Fatalf("originalSize %d, want %d", v.OriginalSize, len(data))
			}
			return
		}
		if v.Status == string(domain.StatusFailed) || time.Now().After(deadline) {
			t.Fatalf("video %s is %s", id, v.Status)
		}
		time.Sleep(50 * time.Millisecond) // polling a status, with a deadline
	}
}

// BenchmarkTusUpload uploads 64 MiB with tus in 8 MiB chunks and as one
// multipart upload, on tmpfs when there is one (kino bench --only tus is
// the same measure on the disk).
func BenchmarkTusUpload(b *testing.B) {
	const size, chunk = 64 << 20, 8 << 20
	dir, err := os.MkdirTemp("/dev/shm", "kino-bench-")
	if err != nil {
		dir = b.TempDir()
	} else {
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	h := start(b, dir, benchPlans)
	key := h.account("bench", domain.PlanBusiness)
	if r := h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}); r.status != 201 {
		b.Fatal(r.status)
	}
	client := benchClient()
	send := func(method, url string, body io.Reader, n int64, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, url, body)
		req.ContentLength = n
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Tus-Resumable", "1.0.0")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	b.Run("tus-8MiB-chunks", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			resp := send("POST", h.url+"/v1/uploads/tus", nil, 0, "Upload-Length", fmt.Sprint(size),
				"Upload-Metadata", "filename YmlnLm1wNA==,collection bWFpbg==")
			loc := resp.Header.Get("Location")
			if resp.StatusCode != 201 {
				b.Fatalf("create: %d", resp.StatusCode)
			}
			src := io.MultiReader(bytes.NewReader(bench.MP4Box), zeroReader{})
			for off := int64(0); off < size; off += chunk {
				if r := send("PATCH", h.url+loc, io.LimitReader(src, chunk), chunk, "Upload-Offset", fmt.Sprint(off),
					"Content-Type", "application/offset+octet-stream"); r.StatusCode != 204 {
					b.Fatalf("PATCH: %d", r.StatusCode)
				}
			}
			b.StopTimer()
			h.do("DELETE", "/v1/videos/"+loc[strings.LastIndex(loc, "/")+1:], key, nil)
			b.StartTimer()
		}
	})
	b.Run("multipart", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			body, ct := streamingUpload("main", "big.mp4", size)
			r := h.request("POST", "/v1/videos", key, ct, body)
			if r.status != 202 {
				b.Fatalf("upload: %d %s", r.status, r.body)
			}
			b.StopTimer()
			h.do("DELETE", "/v1/videos/"+r.json(b)["video"].(map[string]any)["id"].(string), key, nil)
			b.StartTimer()
		}
	})
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Each node keeps its unfinished tus uploads in a directory of its own
// under the media directory, named by an id kept in its data directory:
// the same across restarts, another for another node sharing the media.
func TestTusDirIsPerNode(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	dirA, err := tusDir(a)
	if err != nil {
		t.Fatal(err)
	}
	again, err := tusDir(a)
	if err != nil || again != dirA {
		t.Fatalf("tusDir changed across calls: %q %q %v", dirA, again, err)
	}
	dirB, err := tusDir(b)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dirA) == filepath.Base(dirB) || filepath.Dir(dirA) != filepath.Join(a, "media", ".tus") {
		t.Fatalf("tus directories %q and %q", dirA, dirB)
	}
	if err := os.WriteFile(filepath.Join(a, "node-id"), []byte("../../etc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tusDir(a); err == nil {
		t.Fatal("a node id that is not 16 hex digits was accepted")
	}
}
