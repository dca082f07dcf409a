package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

// The statuses the API answers, each from a real request on real
// dependencies, come out of the one table.
func TestErrorStatusesEndToEnd(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.IdleTimeout = 0 })
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
	t.Parallel()
	b := &idleBody{}
	w := httptest.NewRecorder()
	err := b.bodyError(w, fmt.Errorf("write /x: %w", errNoSpace))
	respond.Error(w, quiet, err)
	if w.Code != http.StatusInsufficientStorage || !strings.Contains(w.Body.String(), "Insufficient storage") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
}

var errNoSpace = syscall.ENOSPC
