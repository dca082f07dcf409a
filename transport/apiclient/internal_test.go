package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

// 429 is always a refusal before anything was done; 503 is retried only
// where sending again cannot do a thing twice.
func TestRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method       string
		refusedFirst bool
		status       int
		want         bool
	}{
		{"GET", false, 429, true},
		{"POST", false, 429, true},
		{"PATCH", false, 429, true},
		{"GET", false, 503, true},
		{"HEAD", false, 503, true},
		{"DELETE", false, 503, true},
		{"POST", false, 503, false}, // may have been written: not sent twice
		{"PATCH", false, 503, false},
		{"POST", true, 503, true}, // an upload kino refused before reading it
		{"GET", false, 500, false},
		{"GET", false, 502, false},
		{"POST", true, 507, false},
		{"GET", false, 404, false},
	} {
		if got := (call{method: tc.method, refusedFirst: tc.refusedFirst}).retryable(tc.status); got != tc.want {
			t.Errorf("%s (refused first %v) %d: retryable %v, want %v", tc.method, tc.refusedFirst, tc.status, got, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":                              0,
		"5":                             5 * time.Second,
		" 60 ":                          time.Minute,
		"-3":                            0,
		"soon":                          0,
		"Sun, 22 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Sun, 22 Nov 2026 11:00:00 GMT": 0, // past
	} {
		if got := parseRetryAfter(h, now); got != want {
			t.Errorf("%q: %v, want %v", h, got, want)
		}
	}
}

// Tokens in direct upload URLs and queries stay out of errors and logs.
func TestRedactPath(t *testing.T) {
	t.Parallel()
	for u, want := range map[string]string{
		"http://h/v1/videos?status=FAILED":                         "/v1/videos",
		"http://h/v1/uploads/tus/direct/tok123":                    "/v1/uploads/tus/direct/REDACTED",
		"http://h/v1/uploads/tus/direct/tok123/01ARZ3NDEKTSV4RRFF": "/v1/uploads/tus/direct/REDACTED/01ARZ3NDEKTSV4RRFF",
		"http://h/v1/uploads/tus/01ARZ3NDEKTSV4RRFF":               "/v1/uploads/tus/01ARZ3NDEKTSV4RRFF",
	} {
		if got := redactPath(u); got != want {
			t.Errorf("%s: %s, want %s", u, got, want)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	base := "https://video.example.com/v1"
	for u, want := range map[string]bool{
		"https://video.example.com/v1/uploads/tus/X": true,
		"https://VIDEO.example.com/v1/x":             true,
		"http://video.example.com/v1/x":              false, // never in clear when the base is https
		"https://video.example.com:8443/v1/x":        false,
		"https://evil.example/v1/x":                  false,
	} {
		if got := sameOrigin(u, base); got != want {
			t.Errorf("%s: %v, want %v", u, got, want)
		}
	}
}

// A tus chunk is sent again after no answer, a moved offset, a damaged
// chunk or the server's trouble; a refusal ends the upload.
func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&TransportError{Err: errors.New("connection reset")}, true},
		{&TransportError{Err: context.Canceled}, false},
		{&TransportError{Err: context.DeadlineExceeded}, false},
		{errors.New("reading the file"), false},
		{&Error{Status: 409}, true},
		{&Error{Status: 460}, true},
		{&Error{Status: 408}, true},
		{&Error{Status: 429}, true},
		{&Error{Status: 500}, true},
		{&Error{Status: 503}, true},
		{&Error{Status: 501}, false},
		{&Error{Status: 507}, false},
		{&Error{Status: 400}, false},
		{&Error{Status: 404}, false},
		{&Error{Status: 410}, false},
		{&Error{Status: 413}, false},
		{&Error{Status: 415}, false},
	} {
		if got := transient(tc.err); got != tc.want {
			t.Errorf("%v: transient %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestResetTime(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]int64{
		`1795312860`:                 1795312860,
		`1795312860.0`:               1795312860,
		`"2026-11-22T02:00:30.776Z"`: time.Date(2026, 11, 22, 2, 0, 30, 0, time.UTC).Unix(),
		`null`:                       time.Time{}.Unix(),
	} {
		if got := resetTime(json.RawMessage(raw)).Unix(); got != want {
			t.Errorf("%s: %d, want %d", raw, got, want)
		}
	}
}

func TestUserAgent(t *testing.T) {
	t.Parallel()
	if got := (&Client{}).userAgent(); got != "kino-go/"+Version {
		t.Errorf("default: %q", got)
	}
	if got := (&Client{UserAgent: "shop/2"}).userAgent(); got != "shop/2 kino-go/"+Version {
		t.Errorf("with the caller's: %q", got)
	}
	_ = http.MethodGet
}
