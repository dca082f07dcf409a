package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

// Labels fixed by the contract (spec §7).
const (
	labelMissingKey  = "Missing API key"
	labelInvalidKey  = "Invalid API key"
	labelRateLimited = "Rate limit exceeded"
)

// kindStatus is the one map from error kind to HTTP status and label:
// every error status the API answers comes from here (docs/api.md lists
// them all).
var kindStatus = map[domain.Kind]struct {
	status int
	label  string
}{
	domain.Invalid:             {http.StatusBadRequest, "Bad request"},
	domain.Unauthenticated:     {http.StatusUnauthorized, labelMissingKey},
	domain.BadCredentials:      {http.StatusUnauthorized, labelInvalidKey},
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
	domain.RateLimited:         {http.StatusTooManyRequests, labelRateLimited},
	domain.Internal:            {http.StatusInternalServerError, "Internal error"},
	domain.Other:               {http.StatusInternalServerError, "Internal error"},
	domain.Unavailable:         {http.StatusServiceUnavailable, "Service unavailable"},
	domain.InsufficientStorage: {http.StatusInsufficientStorage, "Insufficient storage"},
	domain.Gone:                {http.StatusGone, "Gone"},
	domain.PreconditionFailed:  {http.StatusPreconditionFailed, "Precondition failed"},
	domain.ChecksumMismatch:    {statusChecksumMismatch, "Checksum mismatch"}, // tus 1.0 checksum extension
	domain.LoginFailed:         {http.StatusUnauthorized, "Invalid credentials"},
	domain.LoginRequired:       {http.StatusUnauthorized, "Unauthorized"},
}

func errMissingKey() error {
	return domain.E("authenticate", domain.Unauthenticated, "Supply your API key in the Authorization header as a Bearer value: Authorization: Bearer <API_KEY>")
}

func errInvalidKey() error {
	return domain.E("authenticate", domain.BadCredentials, "The API key is invalid or has been revoked")
}

func errBadRequest(format string, args ...any) error {
	return domain.E("", domain.Invalid, format, args...)
}

func errNotFound(what string) error {
	return domain.E("", domain.NotFound, "%s not found", what)
}

// statusOf is the status and label an error is answered with, and the
// message shown with it. Internal and unclassified errors, and any error
// without a client message, are a 500 with a generic message (internal
// reports whether the caller must log the error).
func statusOf(err error) (status int, label, message string, internal bool) {
	kind := domain.KindOf(err)
	st, ok := kindStatus[kind]
	msg := domain.MessageOf(err)
	if !ok || kind == domain.Internal || kind == domain.Other || msg == "" {
		st = kindStatus[domain.Internal]
		return st.status, st.label, "Something went wrong on our side; the error has been logged.", true
	}
	return st.status, st.label, msg, false
}

// writeError is the one path by which errors reach clients. Unknown and
// internal errors are logged in full and answered with a generic message.
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	status, label, msg, internal := statusOf(err)
	if internal {
		log.Error("request failed", "err", err)
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", strconv.Itoa(unavailableRetry))
	}
	writeJSON(w, status, wire.Error{Error: label, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
