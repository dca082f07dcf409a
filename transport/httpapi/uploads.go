package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kino-video/kino/domain"
)

// uploadSlots bounds the uploads in flight: all of them (each holds a
// 1 MiB buffer and a file descriptor), and those of each account, so one
// account holding slow uploads open cannot take every slot.
type uploadSlots struct {
	mu         sync.Mutex
	global     int
	inFlight   int
	perAccount map[string]int
}

// uploadRetry is the Retry-After of an upload refused for want of a slot.
const uploadRetry = 5

// acquire takes a slot for account, whose plan allows accountCap uploads
// at once. The account's cap is checked first: an account at its cap gets
// 429 (its own doing); a full server gets 503.
func (u *uploadSlots) acquire(w http.ResponseWriter, account string, accountCap int) (release func(), err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if accountCap > 0 && u.perAccount[account] >= accountCap {
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return nil, domain.E("upload video", domain.RateLimited,
			"Too many uploads in progress: your plan allows %d at once; retry after %d seconds, when one has finished", accountCap, uploadRetry)
	}
	if u.inFlight >= u.global {
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return nil, domain.E("upload video", domain.Unavailable,
			"The server has too many uploads in progress; retry after %d seconds", uploadRetry)
	}
	u.inFlight++
	u.perAccount[account]++
	return func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.inFlight--
		if u.perAccount[account]--; u.perAccount[account] <= 0 {
			delete(u.perAccount, account)
		}
	}, nil
}

// count is the number of uploads in flight, of account or (account "") of
// everyone.
func (u *uploadSlots) count(account string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if account == "" {
		return u.inFlight
	}
	return u.perAccount[account]
}

// idleBody reads a request body and ends it when no byte arrives for
// idle: before each read it moves the connection's read deadline. Time
// spent by the handler itself (writing to disk) never counts, only the
// wait for the client.
type idleBody struct {
	r        io.Reader
	rc       *http.ResponseController
	idle     time.Duration
	timedOut bool
}

func newIdleBody(w http.ResponseWriter, r *http.Request, idle time.Duration) *idleBody {
	return &idleBody{r: r.Body, rc: http.NewResponseController(w), idle: idle}
}

func (b *idleBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle)) // unsupported (HTTP/2 over some transports): no idle limit
	n, err := b.r.Read(p)
	var ne net.Error
	if err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		b.timedOut = true
	}
	return n, err
}

// done clears the read deadline, so a kept-alive connection is not cut
// while it waits for its next request.
func (b *idleBody) done() { _ = b.rc.SetReadDeadline(time.Time{}) }

// bodyError turns an error met while reading an upload into what the
// client is told: 408 when the body stopped arriving, 507 when the disk is
// full, 400 otherwise. The message never carries the error's text, which
// may name server files or addresses.
func (b *idleBody) bodyError(w http.ResponseWriter, err error) error {
	switch {
	case b.timedOut:
		w.Header().Set("Connection", "close")
		return domain.Wrap("upload video", domain.Timeout, err,
			"no data arrived for "+b.idle.String()+"; the upload was ended and nothing was stored")
	case noSpace(err):
		return storeFailure(w, err)
	}
	w.Header().Set("Connection", "close")
	return domain.Wrap("upload video", domain.Invalid, err,
		"upload interrupted: the request body ended early or was not valid multipart; nothing was stored")
}

// noSpace reports whether err is a file system out of room (or quota, or
// a file larger than it takes).
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) || errors.Is(err, errNoRoom)
}

// storeFailure is what the client is told when the server could not store
// an upload on its own disk: 507 when the disk is full (or inside its
// reserve), a 500 otherwise (logged in full). The message names no path.
func storeFailure(w http.ResponseWriter, err error) error {
	if noSpace(err) {
		w.Header().Set("Connection", "close") // the rest of the body is not read
		return errInsufficientStorage(err)
	}
	return domain.Wrap("upload video", domain.Internal, err, "")
}

// checkRoom refuses (507) an upload when the disk is inside its reserve,
// or when its announced length (n > 0) does not fit above it.
func (s *Server) checkRoom(n int64) error {
	room, err := s.disk.room()
	switch {
	case err != nil:
		s.cfg.Log.Warn("free disk space unknown; upload not checked against the reserve", "err", err)
		return nil
	case room < 0:
		return errInsufficientStorage(errNoRoom)
	case n > room:
		return domain.E("upload video", domain.InsufficientStorage,
			"the server is short of disk space: an upload of %d bytes does not fit now; try again later", n)
	}
	return nil
}
