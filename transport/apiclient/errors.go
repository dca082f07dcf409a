package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kino-video/kino/transport/wire"
)

// Error is an answer of the API other than 2xx: its status and the
// {"error", "message"} body (docs/api.md#errors lists the labels).
type Error struct {
	Status  int    // the HTTP status
	Label   string // the body's "error", e.g. "Not found"
	Message string // the body's "message"
	// RetryAfter is the server's Retry-After (429, 503), 0 when absent.
	RetryAfter time.Duration
	// RequestID is kino's X-Request-Id, also in its log lines.
	RequestID string
}

func (e *Error) Error() string {
	if e.Label == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", e.Label, e.Status, e.Message)
}

// Sentinels for errors.Is: an *Error matches the one of its status.
var (
	ErrBadRequest   = errors.New("kino: bad request")            // 400
	ErrUnauthorized = errors.New("kino: missing or invalid key") // 401
	ErrForbidden    = errors.New("kino: forbidden")              // 403
	ErrNotFound     = errors.New("kino: not found")              // 404 (also another account's resource)
	ErrConflict     = errors.New("kino: conflict")               // 409
	ErrGone         = errors.New("kino: gone")                   // 410 (an expired upload)
	ErrTooLarge     = errors.New("kino: too large")              // 413
	ErrUnsupported  = errors.New("kino: unsupported media type") // 415
	ErrRateLimited  = errors.New("kino: rate limited")           // 429
	ErrUnavailable  = errors.New("kino: service unavailable")    // 503
	ErrStorageFull  = errors.New("kino: insufficient storage")   // 507
)

var byStatus = map[int]error{
	http.StatusBadRequest:            ErrBadRequest,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusForbidden:             ErrForbidden,
	http.StatusNotFound:              ErrNotFound,
	http.StatusConflict:              ErrConflict,
	http.StatusGone:                  ErrGone,
	http.StatusRequestEntityTooLarge: ErrTooLarge,
	http.StatusUnsupportedMediaType:  ErrUnsupported,
	http.StatusTooManyRequests:       ErrRateLimited,
	http.StatusServiceUnavailable:    ErrUnavailable,
	http.StatusInsufficientStorage:   ErrStorageFull,
}

// Is matches the sentinel of e's status: errors.Is(err, ErrNotFound).
func (e *Error) Is(target error) bool {
	s, ok := byStatus[e.Status]
	return ok && s == target
}

// IsNotFound reports whether err is a 404: an unknown id, or another
// account's resource.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsRateLimited reports whether err is a 429 (left after the retries).
func IsRateLimited(err error) bool { return errors.Is(err, ErrRateLimited) }

func newError(r response) *Error {
	var b wire.Error
	_ = json.Unmarshal(r.body, &b)
	e := &Error{Status: r.status, Label: b.Error, Message: b.Message, RequestID: r.header.Get("X-Request-Id")}
	e.RetryAfter = parseRetryAfter(r.header.Get("Retry-After"), time.Now())
	if e.Label == "" {
		e.Label = http.StatusText(r.status)
	}
	return e
}

// FailedError is what Wait returns for a video that ended FAILED: its
// errorMessage says why.
type FailedError struct {
	Video Video
}

// ErrFailed matches a *FailedError: errors.Is(err, ErrFailed).
var ErrFailed = errors.New("kino: video processing failed")

func (e *FailedError) Error() string {
	msg := "processing failed"
	if e.Video.ErrorMessage != nil {
		msg = *e.Video.ErrorMessage
	}
	return "video " + e.Video.ID + " FAILED: " + msg
}

// Is matches ErrFailed.
func (e *FailedError) Is(target error) bool { return target == ErrFailed }
