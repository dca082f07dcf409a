package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
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
		{name: "unauthenticated", err: errMissingKey(), status: 401, label: "Missing API key"},
		{name: "bad credentials", err: errInvalidKey(), status: 401, label: "Invalid API key"},
		{name: "denied", err: domain.E("op", domain.Denied, "not yours to change"), status: 403, label: "Forbidden"},
		{name: "not found", err: errNotFound("video"), status: 404, label: "Not found"},
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
			writeError(w, quiet, tc.err)
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

// The statuses the API answers, each from a real request on real
// dependencies, come out of the one table.
func TestErrorStatusesEndToEnd(t *testing.T) {
	a := newTestAPI(t, func(c *Config) { c.UploadIdleTimeout = 0 })
	key := a.account("acme", domain.PlanPro)
	tests := []struct {
		name   string
		do     func() response
		status int
		label  string
	}{
		{"400 bad JSON", func() response { return a.do("POST", "/v1/collections", key, `{"slug":`) }, 400, "Bad request"},
		{"400 bidi in a collection name", func() response {
			return a.do("POST", "/v1/collections", key, `{"slug":"x","name":"evil\u202Eabc"}`)
		}, 400, "Bad request"},
		{"400 bidi in a filename", func() response { return a.upload(key, "evil\u202Evom.mp4", []byte("x")) }, 400, "Bad request"},
		{"400 C1 control in a filename", func() response { return a.upload(key, "a\u009bb.mp4", []byte("x")) }, 400, "Bad request"},
		{"401 missing", func() response { return a.do("GET", "/v1/videos", "", "") }, 401, "Missing API key"},
		{"401 invalid", func() response { return a.do("GET", "/v1/videos", domain.KeyPrefix+strings.Repeat("x", 32), "") }, 401, "Invalid API key"},
		{"404", func() response { return a.do("GET", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV", key, "") }, 404, "Not found"},
		{"404 route", func() response { return a.do("GET", "/nowhere", "", "") }, 404, "Not found"},
		{"405", func() response { return a.do("PUT", "/v1/videos", key, "") }, 405, "Method not allowed"},
		{"409", func() response { return a.do("POST", "/v1/collections", key, `{"slug":"main","name":"Again"}`) }, 409, "Conflict"},
		{"413 JSON body", func() response {
			return a.do("POST", "/v1/collections", key, `{"slug":"x","name":"`+strings.Repeat("x", MaxJSONBody)+`"}`)
		}, 413, "Request too large"},
		{"413 file", func() response { return a.upload(key, "big.mp4", make([]byte, 2<<20)) }, 413, "File too large"},
		{"415", func() response { return a.upload(key, "notes.txt", []byte("hello")) }, 415, "Unsupported media type"},
		{"503 no webhook sender", func() response {
			r := a.do("POST", "/v1/webhooks", key, `{"url":"https://example.com/h","events":["video.completed"]}`)
			var hook struct{ ID string }
			_ = json.Unmarshal(r.body, &hook)
			return a.do("POST", "/v1/webhooks/"+hook.ID+"/test", key, "")
		}, 503, "Service unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.do(), tc.status, tc.label)
		})
	}
	if in := a.incoming(); len(in) != 0 {
		t.Fatalf("refused uploads left files behind: %v", in)
	}
}

// A full disk is a 507 with a message, not a 500.
func TestDiskFullIsInsufficientStorage(t *testing.T) {
	b := &idleBody{}
	w := httptest.NewRecorder()
	err := b.bodyError(w, fmt.Errorf("write /x: %w", errNoSpace))
	writeError(w, quiet, err)
	if w.Code != http.StatusInsufficientStorage || !strings.Contains(w.Body.String(), "Insufficient storage") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

var errNoSpace = syscall.ENOSPC
