// Package drain bounds how long a request body may take and reads what a
// client still sends after an early answer, so that the answer reaches it.
package drain

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// Bodies bounds how long a request body may take, for every route of
// next, and lets an answer given before the body is read go out at once.
//
// A request that announces a body must deliver it within idle (uploads
// move the deadline on at each read instead, so only a stall ends them). Until the body has been read to its end the
// answer carries Connection: close: otherwise net/http, before sending an
// answer, waits to read up to 256 KiB of what is left, and a client that
// announces a body and sends none (with no key, over its limit, on any
// route) held the answer and the connection for as long as it liked. Once
// the body is read the deadline is lifted, so a long handler (a rebuild)
// is not cut off, and the connection may be kept alive.
//
// An answer given before the body was read to its end (a refusal: no key,
// over the plan's size or rate, a full disk) is sent at once, and then the
// rest of the body is read and thrown away within the linger bounds before
// the connection closes (nginx's lingering close). A client that writes
// its whole request before it reads the answer (Python's requests and
// http.client) would otherwise meet a connection reset while writing, and
// never see the answer.
func Bodies(idle time.Duration, next http.Handler) http.Handler {
	lingering := make(chan struct{}, lingerers)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()                    // the body stays readable after the answer (HTTP/1)
		_ = rc.SetReadDeadline(time.Now().Add(idle)) // unsupported (HTTP/2): net/http's own limits
		w.Header().Set("Connection", "close")
		body := &deadlineBody{ReadCloser: r.Body, done: func() {
			w.Header().Del("Connection")
			_ = rc.SetReadDeadline(time.Time{})
		}}
		r.Body = body
		next.ServeHTTP(w, r)
		if !body.ended {
			linger(lingering, rc, r, body)
		}
	})
}

// The bounds of reading what is left of a body after an early answer:
// nginx's lingering_time and lingering_timeout, a size, and how many
// connections linger at once (past that, they close at once, as before).
const (
	lingerFor   = 30 * time.Second
	lingerIdle  = 5 * time.Second
	lingerBytes = 1 << 30
	lingerers   = 64
)

// linger sends the answer already written, then reads and discards what
// is left of body within the linger bounds. A client that asked to be told
// before it sends (Expect: 100-continue) and has sent nothing is not
// waited for: it has its answer and sends nothing more. HTTP/2 ends a
// refused stream on its own, without losing the connection.
func linger(lingering chan struct{}, rc *http.ResponseController, r *http.Request, body *deadlineBody) {
	if r.ProtoMajor != 1 || (body.read == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue")) {
		return
	}
	select {
	case lingering <- struct{}{}:
		defer func() { <-lingering }()
	default:
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	end := time.Now().Add(lingerFor)
	buf := make([]byte, 32<<10)
	for left := int64(lingerBytes); left > 0; {
		deadline := time.Now().Add(lingerIdle)
		if deadline.After(end) {
			deadline = end
		}
		if rc.SetReadDeadline(deadline) != nil {
			return
		}
		n, err := body.ReadCloser.Read(buf[:min(int64(len(buf)), left)])
		left -= int64(n)
		if err != nil {
			return
		}
	}
}

// deadlineBody calls done once, when its body has been read to the end,
// and counts what was read.
type deadlineBody struct {
	io.ReadCloser
	done  func()
	read  int64
	ended bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err == io.EOF && !b.ended {
		b.ended = true
		b.done()
	}
	return n, err
}
