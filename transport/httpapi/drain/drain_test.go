package drain_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/transport/httpapi/drain"
)

// post writes a whole request with a body of n bytes before it reads the
// answer, as Python's requests does, and returns the answer.
func post(t *testing.T, srv *httptest.Server, path string, n int) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(time.Minute)) // guards against hanging the test, not timings
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: kino\r\nContent-Length: %d\r\n\r\n", path, n); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(bytes.Repeat([]byte("x"), n)); err != nil {
		t.Fatalf("writing the body before reading the answer: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer after the body: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestBodies(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/refuse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "9")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, "too large")
	})
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d", n)
	})
	srv := httptest.NewServer(drain.Bodies(time.Minute, mux))
	defer srv.Close()

	// A refusal given before the body is read reaches a client that writes
	// its whole body first (32 MiB: far more than the socket buffers), and
	// the connection closes after it.
	resp, body := post(t, srv, "/refuse", 32<<20)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || body != "too large" || !resp.Close {
		t.Fatalf("refusal: %d %q close=%v", resp.StatusCode, body, resp.Close)
	}

	// A body read to its end leaves the connection open for the next
	// request.
	resp, body = post(t, srv, "/read", 1<<20)
	if resp.StatusCode != http.StatusOK || body != fmt.Sprint(1<<20) || resp.Close {
		t.Fatalf("read: %d %q close=%v", resp.StatusCode, body, resp.Close)
	}
}
