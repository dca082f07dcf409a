package respond

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/kino-video/kino/domain"
)

// Every kind answers with its status and label, in the one body shape.
// Internal errors, unknown errors and errors without a client message are
// a 500 with a generic message that reveals nothing of the cause.
func TestErrorTable(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		label  string
		msg    string // "" : the error's own message
	}{
		{name: "invalid", err: domain.E("op", domain.Invalid, "limit must be a number"), status: 400, label: "Bad request"},
		{name: "unauthenticated", err: domain.E("authenticate", domain.Unauthenticated, "Supply your API key"), status: 401, label: "Missing API key"},
		{name: "bad credentials", err: domain.E("authenticate", domain.BadCredentials, "The API key is invalid"), status: 401, label: "Invalid API key"},
		{name: "denied", err: domain.E("op", domain.Denied, "not yours to change"), status: 403, label: "Forbidden"},
		{name: "not found", err: domain.E("", domain.NotFound, "video not found"), status: 404, label: "Not found"},
		{name: "forbidden answers as not found", err: domain.E("op", domain.Forbidden, "video not found"), status: 404, label: "Not found"},
		{name: "not allowed", err: domain.E("", domain.NotAllowed, "PUT is not allowed on /v1/videos"), status: 405, label: "Method not allowed"},
		{name: "timeout", err: domain.E("op", domain.Timeout, "no data arrived for 30s"), status: 408, label: "Request timeout"},
		{name: "conflict", err: domain.E("op", domain.Conflict, "collection exists"), status: 409, label: "Conflict"},
		{name: "too large", err: domain.E("op", domain.TooLarge, "file exceeds your plan"), status: 413, label: "File too large"},
		{name: "request too large", err: domain.E("op", domain.RequestTooLarge, "body too big"), status: 413, label: "Request too large"},
		{name: "unsupported", err: domain.E("op", domain.Unsupported, "file type .txt"), status: 415, label: "Unsupported media type"},
		{name: "unsatisfiable", err: domain.E("op", domain.Unsatisfiable, "at most 16 ranges"), status: 416, label: "Range not satisfiable"},
		{name: "rate limited", err: domain.E("op", domain.RateLimited, "Too many requests; retry after 60 seconds"), status: 429, label: "Rate limit exceeded"},
		{name: "unavailable", err: domain.E("op", domain.Unavailable, "too many uploads"), status: 503, label: "Service unavailable"},
		{name: "insufficient storage", err: domain.E("op", domain.InsufficientStorage, "disk full"), status: 507, label: "Insufficient storage"},
		{name: "wrapped keeps its kind", err: fmt.Errorf("load: %w", domain.E("op", domain.Conflict, "raced")), status: 409, label: "Conflict", msg: "raced"},
		{name: "internal", err: domain.Wrap("op", domain.Internal, errors.New("disk /srv/x failed"), "secret detail"), status: 500, label: "Internal error", msg: genericMessage},
		{name: "unknown error", err: errors.New("nats: connection to 10.0.0.1 lost"), status: 500, label: "Internal error", msg: genericMessage},
		{name: "kind without a message", err: domain.Wrap("op", domain.Unavailable, errors.New("x"), ""), status: 500, label: "Internal error", msg: genericMessage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Error(w, quiet, tc.err)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Fatalf("Content-Type %q", ct)
			}
			var body map[string]string
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || len(body) != 2 {
				t.Fatalf("body must be exactly {error, message}: %v %s", err, w.Body)
			}
			want := tc.msg
			if want == "" {
				want = domain.MessageOf(tc.err)
			}
			if body["error"] != tc.label || body["message"] != want {
				t.Fatalf("body %v, want error %q message %q", body, tc.label, want)
			}
		})
	}
}

const genericMessage = "Something went wrong on our side; the error has been logged."

// Every kind has an entry: a new kind without one would answer 500.
func TestEveryKindHasAStatus(t *testing.T) {
	for k := domain.Other; k <= domain.LoginRequired; k++ {
		if _, ok := kindStatus[k]; !ok {
			t.Errorf("kind %q (%d) has no status", k, k)
		}
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
