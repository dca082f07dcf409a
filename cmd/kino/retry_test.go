package main

import (
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// POST /v1/videos/{id}/retry through kino serve, its answers checked
// against docs/openapi.yaml: a FAILED video runs again (and, its file
// being what it is, fails again), a COMPLETED one is refused, another
// account's is not found.
func TestRetryThroughServe(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanPro)
	other := h.account("other", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	bad := h.uploadID(key, "main", "bad.mp4", notAVideo(2000))
	h.waitStatus(key, bad, domain.StatusFailed)
	wantError(t, h.do("POST", "/v1/videos/"+bad+"/retry", other, nil), 404, "Not found")
	r := h.do("POST", "/v1/videos/"+bad+"/retry", key, nil)
	wantStatus(t, r, 202)
	if v := r.json(t)["video"].(map[string]any); v["status"] != "PENDING" || v["id"] != bad || v["filename"] != "bad.mp4" || v["collection"] != "main" {
		t.Fatalf("retry answer %s", r.body)
	}
	h.waitStatus(key, bad, domain.StatusFailed)
	if got := strings.Join(videoEventTypes(t, h, bad), ","); !strings.Contains(got, "TranscodeFailed,TranscodeRetried,TranscodeStarted") {
		t.Fatalf("history %s", got)
	}
	good := h.uploadID(key, "main", "good.mp4", clip(t))
	h.waitStatus(key, good, domain.StatusCompleted)
	wantError(t, h.do("POST", "/v1/videos/"+good+"/retry", key, nil), 409, "Conflict")
}
