package respond

import (
	"context"
	"net"
)

// connKey is the context key of a request's connection (WithConn).
type connKey struct{}

// WithConn keeps a connection in the context of the requests it carries:
// http.Server.ConnContext, so Cork can reach the socket under a
// ResponseWriter.
func WithConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// Cork holds back partly filled TCP segments on the request's connection
// until the function it returns runs, which sends what is held at once: a
// file's answer then leaves in full segments, its headers in the first of
// them, instead of a short segment wherever a write (or one sendfile's
// share of the socket buffer) ends. nginx's tcp_nopush does the same;
// receivers wake and copy per segment, so full ones cost both sides less.
// Where the connection is not TCP on Linux (TLS, a pipe, another system),
// or not known (no WithConn), it does nothing. Call the function before
// the handler returns: the kernel would hold the rest for up to 200 ms.
func Cork(ctx context.Context) (uncork func()) {
	c, _ := ctx.Value(connKey{}).(*net.TCPConn)
	if c == nil || !setCork(c, true) {
		return func() {}
	}
	return func() { setCork(c, false) }
}
