package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/natsserver"
)

// video is an upload's file: a container's first bytes, then n bytes.
func video(n int) []byte {
	return append([]byte("\x00\x00\x00\x18ftypmp42"), make([]byte, n)...)
}

// uploadWith posts an upload of file with client, which may time out.
func (a *testAPI) uploadWith(client *http.Client, key string, file []byte) (response, error) {
	a.t.Helper()
	buf, ct := uploadBody("clip.mp4", file)
	req, err := http.NewRequest("POST", a.srv.URL+"/v1/videos", buf)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body.Bytes(), close: resp.Close}, nil
}

// An upload during a NATS outage must not hang until the outage ends (and
// then answer 500). It must be refused with 503 and Retry-After
// while NATS is down, before its body is read, and succeed again once
// NATS is back on the same port and store. The store logs one line per
// outage, however many requests and probes meet it. The client here gives
// up after 10 s, far below the outage (NATS stays down until the test
// restarts it).
func TestUploadsFailFastWhileNATSIsDown(t *testing.T) {
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	if r := a.upload(key, "a.mp4", video(1000)); r.status != 202 {
		t.Fatalf("upload before the outage: %d %s", r.status, r.body)
	}
	url := a.nats.URL()
	a.nats.Shutdown()
	eventstoretest.Eventually(t, "the store to see the outage", func() bool { return !a.store.Health().Connected })

	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < 3; i++ {
		r, err := a.uploadWith(client, key, video(256<<10))
		if err != nil {
			t.Fatalf("upload while NATS is down did not complete: %v", err)
		}
		wantError(t, r, 503, "Service unavailable")
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("503 with Retry-After %q", r.header.Get("Retry-After"))
		}
		if bytes.Contains(r.body, []byte("/")) {
			t.Fatalf("503 names a path: %s", r.body)
		}
		if r := a.do("GET", "/healthz", "", ""); r.status != 503 {
			t.Fatalf("healthz while NATS is down: %d %s", r.status, r.body)
		}
	}
	r := a.do("GET", "/readyz", "", "")
	var ready struct {
		Status  string   `json:"status"`
		Failing []string `json:"failing"`
	}
	if err := json.Unmarshal(r.body, &ready); err != nil || r.status != 503 || ready.Status != "unavailable" ||
		!strings.Contains(strings.Join(ready.Failing, ","), "nats") {
		t.Fatalf("readyz while NATS is down: %d %s", r.status, r.body)
	}
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("refused uploads left files: %v", in)
	}

	// NATS comes back where it was: uploads work again.
	host := strings.TrimPrefix(url, "nats://")
	srv, err := natsserver.StartEmbedded(a.natsDir, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.store.Close(); srv.Shutdown() })
	eventstoretest.Eventually(t, "the store to reconnect", func() bool { return a.store.Health().Connected })
	if r := a.upload(key, "b.mp4", video(1000)); r.status != 202 {
		t.Fatalf("upload after the outage: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/readyz", "", ""); r.status != 200 {
		t.Fatalf("readyz after the outage: %d %s", r.status, r.body)
	}
	logs := a.storeLog.String()
	if n := strings.Count(logs, "event store disconnected"); n != 1 {
		t.Fatalf("%d disconnect lines for one outage:\n%s", n, logs)
	}
	if n := strings.Count(logs, "event store reconnected"); n != 1 {
		t.Fatalf("%d reconnect lines for one outage:\n%s", n, logs)
	}
}

// An upload whose body is still arriving when NATS goes down ends with 503
// as soon as the body is in, not after the outage, and leaves no file: the
// event store refused before sending anything, so nothing was stored.
func TestUploadInFlightWhenNATSGoesDown(t *testing.T) {
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	body, ct := uploadBody("clip.mp4", video(512<<10))
	raw := body.Bytes()

	conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/videos HTTP/1.1\r\nHost: kino\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		key, ct, len(raw))
	if _, err := conn.Write(raw[:len(raw)/2]); err != nil {
		t.Fatal(err)
	}
	eventstoretest.Eventually(t, "the upload's partial file", func() bool { return len(a.incoming()) == 1 })
	a.nats.Shutdown()
	eventstoretest.Eventually(t, "the store to see the outage", func() bool { return !a.store.Health().Connected })
	if _, err := conn.Write(raw[len(raw)/2:]); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // far below an outage that lasts until the test ends
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer while NATS is down: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantError(t, response{status: resp.StatusCode, header: resp.Header, body: b}, 503, "Service unavailable")
	if resp.Header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %v", resp.Header)
	}
	entries, err := os.ReadDir(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if domain.ValidID(e.Name()) {
			t.Fatalf("the refused upload's file was kept: %s", e.Name())
		}
	}
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("partial file left: %v", in)
	}
}

// A tus creation or PATCH appends nothing: its bytes wait for the last
// PATCH's UploadAccepted. While the event store's appends are known to
// fail (here: the server holding the event stream is gone), they are
// refused at once with 503, as a multipart upload is, also when a probe
// of the writes is due (an append goes through then, to find out; these
// have none to find out with): the client must not send bytes that cannot
// become a video. So is a direct upload URL. Once the stream is back,
// they work again without any append.
func TestTusRefusedWhileTheEventStoreTakesNoWrites(t *testing.T) {
	a, c, stream := newClusterAPI(t, func(c *Config) { c.Limits.Ledger = nil }) // the shared ledger may be on that server
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	loc := a.tusCreate(key, len(file))
	c.Nodes[stream].Shutdown()
	_, err := a.store.Append(context.Background(), domain.AccountStream("after"), 0, []domain.Payload{domain.AccountCreated{Plan: domain.PlanFree}})
	if !domain.IsKind(err, domain.Unavailable) || a.store.Health().Writes == nil {
		t.Fatalf("append with the event stream's server gone: %v; want Unavailable, and writes known to fail", err)
	}
	before := len(a.tusFiles())

	for _, tc := range []struct {
		name string
		send func() response
	}{
		{"creation", func() response {
			return a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
				"Upload-Length": strconv.Itoa(len(file)), "Upload-Metadata": tusMeta("filename", "clip.mp4", "collection", "main")}, nil)
		}},
		{"creation with upload", func() response {
			return a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
				"Upload-Length": strconv.Itoa(len(file)), "Upload-Metadata": tusMeta("filename", "clip.mp4", "collection", "main")}, file)
		}},
		{"PATCH", func() response { return a.tusPatch(loc, key, 0, file[:1000]) }},
		{"direct upload URL", func() response { return a.do("POST", "/v1/uploads", key, `{"collection":"main"}`) }},
		// Not a tus request, but the same window: the upload goes ahead and
		// meets the stream when it loads the collection.
		{"multipart upload", func() response { return a.upload(key, "clip.mp4", file) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eventstoretest.Eventually(t, "a probe of the writes to be due", func() bool { return a.store.Writable() == nil })
			r := tc.send()
			wantError(t, r, 503, "Service unavailable")
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("503 with Retry-After %q", r.header.Get("Retry-After"))
			}
			if n := len(a.tusFiles()); n != before {
				t.Fatalf("the tus directory holds %d files, %d before the refusal", n, before)
			}
			if off, _ := a.tusOffset(loc, key); off != 0 {
				t.Fatalf("the upload's offset moved to %d", off)
			}
		})
	}

	c.Start(stream)
	eventstoretest.Eventually(t, "writes to be found working again", func() bool { return a.s.writableNow() == nil })
	a.tusCreate(key, len(file))
	if r := a.tusPatch(loc, key, 0, file); r.status != 204 {
		t.Fatalf("PATCH once the stream is back: %d %s", r.status, r.body)
	}
	// Right after the stream came back the read models may still be
	// catching up past the write's settle wait: the video is durable, and
	// shows once they have.
	id := strings.TrimPrefix(loc, "/v1/uploads/tus/")
	// Read from the read models, not through the API: polling the API
	// would spend the free plan's 60 requests a minute.
	eventstoretest.Eventually(t, "the read models to show the video", func() bool {
		_, ok, err := a.s.cfg.DB.Video(id)
		return ok && err == nil
	})
	a.wantVideo(key, id, "clip.mp4")
}
