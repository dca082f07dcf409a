// Package respond writes the API's answers: JSON bodies, and errors in the
// spec's {"error", "message"} shape with the status the one kind-to-status
// table gives. Every protocol kino serves over HTTP (the /v1 API, tus,
// /cdn and /play, admin) answers its errors through Error, so an error
// kind means the same status everywhere. Internal and unclassified errors
// are a 500 with a generic message, logged in full once, here.
package respond

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

const (
	// StatusChecksumMismatch is tus's answer to a chunk whose
	// Upload-Checksum does not match (the checksum extension).
	StatusChecksumMismatch = 460
	// UnavailableRetry is the Retry-After (seconds) of a 503 whose handler
	// set none: an outage of the event store, a part not running.
	UnavailableRetry = 5
)

// Labels fixed by the contract (spec §7).
const (
	LabelMissingKey  = "Missing API key"
	LabelInvalidKey  = "Invalid API key"
	LabelRateLimited = "Rate limit exceeded"
)

// kindStatus is the one map from error kind to HTTP status and label:
// every error status the API answers comes from here (docs/api.md lists
// them all).
var kindStatus = map[domain.Kind]struct {
	status int
	label  string
}{
	domain.Invalid:             {http.StatusBadRequest, "Bad request"},
	domain.Unauthenticated:     {http.StatusUnauthorized, LabelMissingKey},
	domain.BadCredentials:      {http.StatusUnauthorized, LabelInvalidKey},
	domain.Denied:              {http.StatusForbidden, "Forbidden"},
	domain.NotFound:            {http.StatusNotFound, "Not found"},
	domain.Forbidden:           {http.StatusNotFound, "Not found"}, // never tell a caller what another account holds
	domain.NotAllowed:          {http.StatusMethodNotAllowed, "Method not allowed"},
	domain.Timeout:             {http.StatusRequestTimeout, "Request timeout"},
	domain.Conflict:            {http.StatusConflict, "Conflict"},
	domain.TooLarge:            {http.StatusRequestEntityTooLarge, "File too large"},
	domain.RequestTooLarge:     {http.StatusRequestEntityTooLarge, "Request too large"},
	domain.Unsupported:         {http.StatusUnsupportedMediaType, "Unsupported media type"},
	domain.Unsatisfiable:       {http.StatusRequestedRangeNotSatisfiable, "Range not satisfiable"},
	domain.RateLimited:         {http.StatusTooManyRequests, LabelRateLimited},
	domain.Internal:            {http.StatusInternalServerError, "Internal error"},
	domain.Other:               {http.StatusInternalServerError, "Internal error"},
	domain.Unavailable:         {http.StatusServiceUnavailable, "Service unavailable"},
	domain.InsufficientStorage: {http.StatusInsufficientStorage, "Insufficient storage"},
	domain.Gone:                {http.StatusGone, "Gone"},
	domain.PreconditionFailed:  {http.StatusPreconditionFailed, "Precondition failed"},
	domain.ChecksumMismatch:    {StatusChecksumMismatch, "Checksum mismatch"}, // tus 1.0 checksum extension
	domain.LoginFailed:         {http.StatusUnauthorized, "Invalid credentials"},
	domain.LoginRequired:       {http.StatusUnauthorized, "Unauthorized"},
}

// StatusOf is the status and label an error is answered with, and the
// message shown with it. Internal and unclassified errors, and any error
// without a client message, are a 500 with a generic message (internal
// reports whether the caller must log the error).
func StatusOf(err error) (status int, label, message string, internal bool) {
	kind := domain.KindOf(err)
	st, ok := kindStatus[kind]
	msg := domain.MessageOf(err)
	if !ok || kind == domain.Internal || kind == domain.Other || msg == "" {
		st = kindStatus[domain.Internal]
		return st.status, st.label, "Something went wrong on our side; the error has been logged.", true
	}
	return st.status, st.label, msg, false
}

// Error is the one path by which errors reach clients. Unknown and
// internal errors are logged in full and answered with a generic message.
func Error(w http.ResponseWriter, log *slog.Logger, err error) {
	status, label, msg, internal := StatusOf(err)
	if internal {
		log.Error("request failed", "err", err)
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(UnavailableRetry))
	}
	JSON(w, status, wire.Error{Error: label, Message: msg})
}

// JSON writes v as the body of a status answer, with its Content-Length:
// an answer sent before the request's body was read (a refusal) must say
// where it ends, or the client would wait for the connection to close.
func JSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// ReadFrom copies r to w through w's own ReadFrom when it has one (the
// server's response: sendfile from a file to the connection), so a
// wrapper around a ResponseWriter can keep that path by calling it.
func ReadFrom(w http.ResponseWriter, r io.Reader) (int64, error) {
	if rf, ok := w.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{w}, r)
}

// writerOnly hides every method but Write, so io.Copy cannot come back
// to a ReadFrom.
type writerOnly struct{ io.Writer }
