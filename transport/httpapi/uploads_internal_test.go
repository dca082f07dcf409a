package httpapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/wire"
)

// slowUpload is an upload that sends its headers and the start of its
// file, then (until told otherwise) nothing: a hostile client holding a
// slot.
type slowUpload struct {
	conn net.Conn
	br   *bufio.Reader
}

func (a *testAPI) slowUpload(key string) *slowUpload {
	a.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { conn.Close() })
	body := "--B\r\nContent-Disposition: form-data; name=\"collection\"\r\n\r\nmain\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.mp4\"\r\nContent-Type: video/mp4\r\n\r\n" +
		"\x00\x00\x00\x18ftypmp42" + strings.Repeat("\x00", 1024-12) // what the upload sniffs, then nothing
	fmt.Fprintf(conn, "POST /v1/videos HTTP/1.1\r\nHost: kino\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 900000\r\n\r\n%s", key, body)
	return &slowUpload{conn: conn, br: bufio.NewReader(conn)}
}

// response reads the answer (with a deadline, so a hung server fails the
// test instead of hanging it).
func (u *slowUpload) response(t *testing.T) response {
	t.Helper()
	_ = u.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(u.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}
}

// Slow uploads of account A (holding connections, sending nothing) take
// at most A's plan's slots; B's upload goes through. On a server with only
// the global cap, A's six uploads took all four slots and B got 503.
func TestSlowUploadsOfOneAccountDoNotStopAnother(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.MaxInFlight = 4 })
	keyA := a.account("alpha", domain.PlanFree) // 2 uploads at once
	keyB := a.account("beta", domain.PlanFree)
	keyC := a.account("gamma", domain.PlanFree)

	var held []*slowUpload
	for i := 0; i < 2; i++ {
		held = append(held, a.slowUpload(keyA))
	}
	eventstoretest.Eventually(t, "A's two uploads in flight", func() bool { return a.s.uploads.count("alpha") == 2 })
	for i := 0; i < 4; i++ {
		r := a.slowUpload(keyA).response(t)
		m := wantError(t, r, 429, "Rate limit exceeded")
		if r.header.Get("Retry-After") == "" || !strings.Contains(m["message"].(string), "your plan allows 2 at once") {
			t.Fatalf("A over its cap: %v %s", r.header, r.body)
		}
	}
	if n := a.s.uploads.count(""); n != 2 {
		t.Fatalf("%d uploads in flight, want A's 2", n)
	}
	if r := a.upload(keyB, "b.mp4", []byte("\x00\x00\x00\x18ftypmp42 a small video")); r.status != 202 {
		t.Fatalf("B's upload while A holds its slots: %d %s", r.status, r.body)
	}

	// The global cap still holds: with C's two slow uploads the server is
	// full, and B gets 503 until one ends.
	var heldC []*slowUpload
	for i := 0; i < 2; i++ {
		heldC = append(heldC, a.slowUpload(keyC))
	}
	eventstoretest.Eventually(t, "C's two uploads in flight", func() bool { return a.s.uploads.count("") == 4 })
	r := a.upload(keyB, "b.mp4", []byte("\x00\x00\x00\x18ftypmp42 a small video"))
	wantError(t, r, 503, "Service unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %v", r.header)
	}
	heldC[0].conn.Close()
	eventstoretest.Eventually(t, "C's upload to end", func() bool { return a.s.uploads.count("") == 3 })
	if r := a.upload(keyB, "b.mp4", []byte("\x00\x00\x00\x18ftypmp42 a small video")); r.status != 202 {
		t.Fatalf("B's upload after a slot freed: %d %s", r.status, r.body)
	}
	for _, u := range append(held, heldC...) {
		u.conn.Close()
	}
	eventstoretest.Eventually(t, "every slow upload to end and its partial file to go", func() bool {
		return a.s.uploads.count("") == 0 && len(a.incoming()) == 0
	})
}

// An upload whose body stops arriving ends after the idle timeout with
// 408, and its partial file is removed from media/.incoming.
func TestIdleUploadEndsWith408(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.IdleTimeout = 200 * time.Millisecond })
	key := a.account("acme", domain.PlanFree)
	u := a.slowUpload(key)
	// While bytes keep coming the upload lives, whatever the idle timeout.
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := u.conn.Write([]byte{0}); err != nil {
					return
				}
			}
		}
	}()
	eventstoretest.Eventually(t, "the partial file", func() bool { return len(a.incoming()) == 1 })
	close(stop)
	<-trickled
	r := u.response(t)
	m := wantError(t, r, 408, "Request timeout")
	if !strings.Contains(m["message"].(string), "no data arrived for 200ms") || !r.close {
		t.Fatalf("408: %v %s", r.header, r.body)
	}
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("partial upload left in media/.incoming: %v", in)
	}
	if n := a.s.uploads.count(""); n != 0 {
		t.Fatalf("%d upload slots still held", n)
	}
	// An upload that keeps arriving is not cut, and the connection's
	// deadline does not outlive it.
	if r := a.upload(key, "ok.mp4", []byte("\x00\x00\x00\x18ftypmp42 video")); r.status != 202 {
		t.Fatalf("upload after an idle one: %d %s", r.status, r.body)
	}
}

// An upload whose bytes are no video container is refused with 415 before
// it is stored, whatever its name: the playlists and scripts that would
// make ffmpeg open other files never reach the transcoder. A real
// container's first bytes pass.
func TestUploadRefusesWhatIsNotAVideo(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	tests := []struct {
		name, filename, content string
		status                  int
	}{
		{"HLS playlist named .mp4", "innocent.mp4", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nfile:///etc/secret.ts\n#EXT-X-ENDLIST\n", 415},
		{"relative segment named .mkv", "clip.mkv", "#EXTM3U\n#EXTINF:2,\n../01ARZ3NDEKTSV4RRFFQ69G5FAV/original.mkv\n", 415},
		{"ffconcat script", "a.mov", "ffconcat version 1.0\nfile '/etc/passwd'\n", 415},
		{"text", "notes.webm", "hello, this is not a video", 415},
		{"mp4 box header", "ok.mp4", "\x00\x00\x00\x18ftypisom then the rest", 202},
		{"matroska header", "ok.mkv", "\x1a\x45\xdf\xa3 then the rest", 202},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.upload(key, tc.filename, []byte(tc.content))
			if tc.status == 202 {
				if r.status != 202 {
					t.Fatalf("%d %s", r.status, r.body)
				}
				return
			}
			m := wantError(t, r, tc.status, "Unsupported media type")
			if !strings.Contains(m["message"].(string), "not a video kino can read") {
				t.Fatalf("message: %s", r.body)
			}
		})
	}
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("refused uploads left files behind: %v", in)
	}
	videos := a.do("GET", "/v1/videos", key, "")
	if n := strings.Count(string(videos.body), `"id"`); n != 2 {
		t.Fatalf("%d videos listed, want the 2 accepted: %s", n, videos.body)
	}
}

// A request that announces a body and never sends it is answered at once
// when the answer needs no body (no key, over a cap), and on any route the
// body must arrive within the idle limit: such requests used to hold their
// connection, unanswered, for as long as the client liked.
func TestAnnouncedBodiesThatNeverCome(t *testing.T) {
	t.Parallel()
	raw := func(a *testAPI, req string) response {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		// A guard against hanging the test, not a timing: the server's
		// body limit below is an hour.
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}
	}
	t.Run("no key", func(t *testing.T) {
		a := newTestAPI(t, func(c *Config) { c.Uploads.IdleTimeout = time.Hour })
		r := raw(a, "POST /v1/videos HTTP/1.1\r\nHost: kino\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n")
		wantError(t, r, 401, "Missing API key")
		if !r.close {
			t.Fatal("the connection is kept although the body was never read")
		}
	})
	t.Run("stalled JSON body", func(t *testing.T) {
		a := newTestAPI(t, func(c *Config) { c.Uploads.IdleTimeout = 200 * time.Millisecond })
		key := a.account("acme", domain.PlanFree)
		r := raw(a, "POST /v1/collections HTTP/1.1\r\nHost: kino\r\nAuthorization: Bearer "+key+
			"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"")
		if r.status/100 != 4 || !r.close {
			t.Fatalf("%d close=%v %s", r.status, r.close, r.body)
		}
	})
	t.Run("a body read to its end keeps the connection", func(t *testing.T) {
		a := newTestAPI(t, func(c *Config) { c.Uploads.IdleTimeout = time.Hour })
		key := a.account("acme", domain.PlanFree)
		body := `{"slug":"kept","name":"Kept"}`
		r := raw(a, fmt.Sprintf("POST /v1/collections HTTP/1.1\r\nHost: kino\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, len(body), body))
		if r.status != 201 || r.close {
			t.Fatalf("%d close=%v %s", r.status, r.close, r.body)
		}
	})
}

// A client that writes its whole request before it reads the answer
// (Python's requests and http.client do) gets the early refusal and its
// JSON, not a connection reset: the server reads and throws away the rest
// of the body (within bounds) after answering, instead of closing the
// connection under a client still writing. 32 MiB is far more than the
// socket buffers hold, so a server that stopped reading would reset the
// connection while the body is written.
func TestEarlyAnswersReachClientsThatWriteTheWholeBodyFirst(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) {
		p := domain.DefaultPlans()
		free := p[domain.PlanFree]
		free.MaxUploadBytes = 256 << 10
		p[domain.PlanFree] = free
		c.Plans = p
	})
	key := a.account("acme", domain.PlanFree)
	body := bytes.Repeat([]byte("x"), 32<<20)
	writeFirst := func(t *testing.T, head string) response {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(a.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Guards against hanging the test, not timings.
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(conn, head+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(body); err != nil {
			t.Fatalf("writing the body before reading the answer: %v", err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer after the body: %v", err)
		}
		defer resp.Body.Close()
		if resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 {
			// The server reads the rest of the body after answering: an
			// answer that ends when the connection closes would wait for it.
			t.Errorf("%d answer without a Content-Length: it ends only when the connection closes", resp.StatusCode)
		}
		b, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}
	}
	upload := "POST /v1/videos HTTP/1.1\r\nHost: kino\r\nContent-Type: multipart/form-data; boundary=B\r\n"
	t.Run("no key", func(t *testing.T) {
		wantError(t, writeFirst(t, upload), 401, "Missing API key")
	})
	t.Run("over the plan's size", func(t *testing.T) {
		r := writeFirst(t, upload+"Authorization: Bearer "+key+"\r\n")
		wantError(t, r, 413, "File too large")
	})
	t.Run("unknown route", func(t *testing.T) {
		r := writeFirst(t, "PUT /v1/nowhere HTTP/1.1\r\nHost: kino\r\nAuthorization: Bearer "+key+"\r\nContent-Type: application/octet-stream\r\n")
		if r.status != 404 && r.status != 405 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}

// An account's videos hold at most its plan's storage quota: an upload
// that would pass it is 413 through multipart (at acceptance, when its
// size is known), tus creation and a direct upload URL, with a message
// that names the quota; another account keeps uploading; GET /v1/account
// shows the quota; deleting a video gives its bytes back.
func TestStorageQuota(t *testing.T) {
	t.Parallel()
	const quota = 100 << 10
	a := newTestAPI(t, func(c *Config) {
		p := testPlans()
		free := p[domain.PlanFree]
		free.StorageBytes = quota
		p[domain.PlanFree] = free
		c.Plans = p
	})
	key := a.account("acme", domain.PlanFree)
	other := a.account("other", domain.PlanFree)
	file := clip(60 << 10)
	r := a.upload(key, "first.mp4", file)
	wantStatus(t, r, 202)
	var first wire.Uploaded
	_ = json.Unmarshal(r.body, &first)

	quotaMessage := func(t *testing.T, r response) {
		t.Helper()
		m := wantError(t, r, 413, "File too large")
		if msg := m["message"].(string); !strings.Contains(msg, "storage quota is 102400 bytes") || !strings.Contains(msg, "delete videos") {
			t.Fatalf("message %q", msg)
		}
	}
	quotaMessage(t, a.upload(key, "second.mp4", file))
	quotaMessage(t, a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": strconv.Itoa(len(file)), "Upload-Metadata": tusMeta("filename", "t.mp4", "collection", "main")}, nil))
	url, _ := a.directURL(key)
	quotaMessage(t, a.tusReq("POST", url, "", map[string]string{
		"Upload-Length": strconv.Itoa(len(file)), "Upload-Metadata": tusMeta("filename", "d.mp4")}, nil))
	wantStatus(t, a.upload(other, "theirs.mp4", file), 202)

	r = a.do("GET", "/v1/account", key, "")
	var acct struct {
		Limits       struct{ StorageBytes int64 }
		StorageBytes int64
	}
	if err := json.Unmarshal(r.body, &acct); err != nil || acct.Limits.StorageBytes != quota || acct.StorageBytes != int64(len(file)) {
		t.Fatalf("GET /v1/account: %s %v", r.body, err)
	}

	wantStatus(t, a.do("DELETE", "/v1/videos/"+first.Video.ID, key, ""), 200)
	eventstoretest.EventuallyEvery(t, "the deleted video's bytes given back", 20*time.Millisecond, func() (bool, string) {
		r := a.upload(key, "again.mp4", file)
		return r.status == 202, fmt.Sprintf("%d %s", r.status, r.body)
	})
}
