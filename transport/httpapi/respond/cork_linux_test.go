package respond

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
)

// corked reads TCP_CORK from c.
func corked(t *testing.T, c *net.TCPConn) bool {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return v != 0
}

// A handler corks the connection its request came on while it sends, and
// the connection is uncorked when it is done; the answer arrives whole.
func TestCorkHoldsTheRequestsConnectionUntilUncorked(t *testing.T) {
	body := strings.Repeat("segment ", 100_000)
	var during, after bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(connKey{}).(*net.TCPConn)
		uncork := Cork(r.Context())
		during = corked(t, c)
		_, _ = io.WriteString(w, body)
		uncork()
		after = corked(t, c)
	}))
	srv.Config.ConnContext = WithConn
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != body {
		t.Fatalf("answer: %d bytes, %v", len(got), err)
	}
	if !during || after {
		t.Fatalf("TCP_CORK while sending: %v, after: %v", during, after)
	}
}

// Without a TCP connection in the context, Cork does nothing.
func TestCorkWithoutATCPConnectionDoesNothing(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for _, ctx := range []context.Context{context.Background(), WithConn(context.Background(), a)} {
		Cork(ctx)()
	}
}
