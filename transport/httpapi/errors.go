package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/kino-video/kino/domain"
)

// errorBody is the one error shape of the API: {"error", "message"}.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// apiError is an error decided by the transport itself (authentication,
// rate limits, routing, request framing), with its status and label.
type apiError struct {
	status  int
	label   string
	message string
}

func (e *apiError) Error() string { return e.label + ": " + e.message }

// Labels of errors decided here (DESIGN.md "Decisions").
const (
	labelMissingKey  = "Missing API key"
	labelInvalidKey  = "Invalid API key"
	labelRateLimited = "Rate limit exceeded"
)

func errMissingKey() error {
	return &apiError{http.StatusUnauthorized, labelMissingKey, "Supply your API key in the Authorization header as a Bearer value: Authorization: Bearer <API_KEY>"}
}

func errInvalidKey() error {
	return &apiError{http.StatusUnauthorized, labelInvalidKey, "The API key is invalid or has been revoked"}
}

func errBadRequest(format string, args ...any) error {
	return domain.E("", domain.Invalid, format, args...)
}

func errNotFound(what string) error {
	return domain.E("", domain.NotFound, "%s not found", what)
}

// kindStatus is the one map from error kind to HTTP status and label.
var kindStatus = map[domain.Kind]struct {
	status int
	label  string
}{
	domain.Invalid:     {http.StatusBadRequest, "Bad request"},
	domain.NotFound:    {http.StatusNotFound, "Not found"},
	domain.Conflict:    {http.StatusConflict, "Conflict"},
	domain.Forbidden:   {http.StatusNotFound, "Not found"}, // never tell a caller what another account holds
	domain.TooLarge:    {http.StatusRequestEntityTooLarge, "File too large"},
	domain.Unsupported: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	domain.Internal:    {http.StatusInternalServerError, "Internal error"},
	domain.Other:       {http.StatusInternalServerError, "Internal error"},
}

// writeError is the one path by which errors reach clients. Unknown and
// internal errors are logged in full and answered with a generic message.
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeJSON(w, ae.status, errorBody{Error: ae.label, Message: ae.message})
		return
	}
	kind := domain.KindOf(err)
	st := kindStatus[kind]
	msg := domain.MessageOf(err)
	if st.status >= 500 || msg == "" {
		log.Error("request failed", "err", err)
		msg = "Something went wrong on our side; the error has been logged."
		st = kindStatus[domain.Internal]
	}
	writeJSON(w, st.status, errorBody{Error: st.label, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
