package httpapi

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/wire"
)

// failVideo uploads a video and records it FAILED, as the transcoder
// does after a final failure.
func (a *testAPI) failVideo(key string) string {
	a.t.Helper()
	r := a.upload(key, "a.mp4", video(100))
	if r.status != 202 {
		a.t.Fatalf("upload: %d %s", r.status, r.body)
	}
	var up wire.Uploaded
	if err := json.Unmarshal(r.body, &up); err != nil {
		a.t.Fatal(err)
	}
	id := up.Video.ID
	ctx := context.Background()
	if _, err := eventstore.Execute[domain.Video](ctx, a.store, videoStream(id), domain.StartTranscode{Worker: "w"}); err != nil {
		a.t.Fatal(err)
	}
	res, err := eventstore.Execute[domain.Video](ctx, a.store, videoStream(id), domain.FailTranscode{Reason: "No.", Final: true})
	if err != nil {
		a.t.Fatal(err)
	}
	a.settle(res.LastSeq())
	return id
}

func TestRetry(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanFree)
	other := a.account("other", domain.PlanFree)

	t.Run("a FAILED video is queued again, once", func(t *testing.T) {
		id := a.failVideo(key)
		r := a.do("POST", "/v1/videos/"+id+"/retry", key, "")
		if r.status != 202 {
			t.Fatalf("retry: %d %s", r.status, r.body)
		}
		var got map[string]any
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"message": "Video queued for another attempt.",
			"video": map[string]any{"id": id, "filename": "a.mp4", "status": "PENDING", "collection": "main"}}
		if b1, b2 := mustJSON(t, got), mustJSON(t, want); b1 != b2 {
			t.Fatalf("retry answer %s, want %s", b1, b2)
		}
		r = a.do("GET", "/v1/videos/"+id, key, "")
		var v wire.Video
		if err := json.Unmarshal(r.body, &v); err != nil || v.Status != domain.StatusPending || v.ErrorMessage != nil {
			t.Fatalf("after retry: %v %s", err, r.body)
		}
		wantError(t, a.do("POST", "/v1/videos/"+id+"/retry", key, ""), 409, "Conflict")
		r = a.do("GET", "/v1/videos/"+id+"/events", key, "")
		var evs wire.Events
		if err := json.Unmarshal(r.body, &evs); err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range evs.Events {
			types = append(types, e.Type)
		}
		if n := len(types); n < 2 || types[n-2] != domain.TypeTranscodeFailed || types[n-1] != domain.TypeTranscodeRetried {
			t.Fatalf("history %v, want ... TranscodeFailed, TranscodeRetried", types)
		}
	})
	t.Run("not FAILED", func(t *testing.T) {
		r := a.upload(key, "b.mp4", video(100))
		var up wire.Uploaded
		_ = json.Unmarshal(r.body, &up)
		wantError(t, a.do("POST", "/v1/videos/"+up.Video.ID+"/retry", key, ""), 409, "Conflict")
	})
	t.Run("another account's, or unknown", func(t *testing.T) {
		id := a.failVideo(key)
		wantError(t, a.do("POST", "/v1/videos/"+id+"/retry", other, ""), 404, "Not found")
		wantError(t, a.do("POST", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV/retry", key, ""), 404, "Not found")
		wantError(t, a.do("POST", "/v1/videos/..%2f..%2fetc/retry", key, ""), 404, "Not found")
		wantError(t, a.do("POST", "/v1/videos/"+id+"/retry", "", ""), 401, "Missing API key")
		wantError(t, a.do("GET", "/v1/videos/"+id+"/retry", key, ""), 405, "Method not allowed")
	})
	t.Run("the original is gone", func(t *testing.T) {
		id := a.failVideo(key)
		p, err := a.media.Original(id, ".mp4")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		wantError(t, a.do("POST", "/v1/videos/"+id+"/retry", key, ""), 409, "Conflict")
		r := a.do("GET", "/v1/videos/"+id, key, "")
		if !json.Valid(r.body) || !containsStatus(r.body, domain.StatusFailed) {
			t.Fatalf("a refused retry changed the video: %s", r.body)
		}
	})
}

func containsStatus(body []byte, s domain.Status) bool {
	var v struct{ Status domain.Status }
	return json.Unmarshal(body, &v) == nil && v.Status == s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
