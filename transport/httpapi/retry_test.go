package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
	"github.com/kino-video/kino/transport/wire"
)

// A video that FAILED for a reason since fixed (its plan allowed 1 s and the clip is 3 s long, the
// account was moved to a plan that allows it) is retried and ends
// COMPLETED, with its media served; its history shows the retry.
func TestRetryOfAFailedThenFixedVideoEndsCompleted(t *testing.T) {
	plans := domain.DefaultPlans()
	free := plans[domain.PlanFree]
	free.MaxDuration = time.Second
	plans[domain.PlanFree] = free
	k := httpapitest.Start(t, httpapitest.Options{Plans: plans, Transcode: true})
	key := k.Account("acme", domain.PlanFree)
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, k.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		if strings.HasPrefix(body, "{") {
			req.Header.Set("Content-Type", "application/json")
		}
		if strings.HasPrefix(body, "--") {
			req.Header.Set("Content-Type", "multipart/form-data; boundary="+body[2:strings.Index(body, "\r\n")])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if st, b := call("POST", "/v1/collections", `{"slug":"main","name":"Main"}`); st != 201 {
		t.Fatalf("collection: %d %s", st, b)
	}
	clip, err := os.ReadFile(ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 64, 48, 3, false))
	if err != nil {
		t.Fatal(err)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("collection", "main")
	fw, _ := mw.CreateFormFile("file", "clip.mp4")
	_, _ = fw.Write(clip)
	_ = mw.Close()
	st, b := call("POST", "/v1/videos", form.String())
	if st != 202 {
		t.Fatalf("upload: %d %s", st, b)
	}
	var up wire.Uploaded
	if err := json.Unmarshal(b, &up); err != nil {
		t.Fatal(err)
	}
	id := up.Video.ID
	wait := func(want domain.Status) wire.Video {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			var v wire.Video
			st, b := call("GET", "/v1/videos/"+id, "")
			if err := json.Unmarshal(b, &v); err != nil || st != 200 {
				t.Fatalf("get: %d %s", st, b)
			}
			if v.Status == want {
				return v
			}
			if v.Status == domain.StatusCompleted || v.Status == domain.StatusFailed || time.Now().After(deadline) {
				t.Fatalf("video %s, want %s: %s", v.Status, want, b)
			}
			time.Sleep(20 * time.Millisecond)
			k.Clock().Advance(time.Minute) // polls never run into the rate limit
		}
	}
	if v := wait(domain.StatusFailed); v.ErrorMessage == nil || !strings.Contains(*v.ErrorMessage, "free") {
		t.Fatalf("failed for another reason: %v", v.ErrorMessage)
	}

	// Fixed: the account moves to a plan that allows the clip.
	if _, err := eventstore.Execute[domain.Account](context.Background(), k.Store, domain.AccountStream("acme"),
		domain.ChangePlan{Plan: domain.PlanPro}); err != nil {
		t.Fatal(err)
	}
	if st, b := call("POST", "/v1/videos/"+id+"/retry", ""); st != 202 || !strings.Contains(string(b), `"status":"PENDING"`) {
		t.Fatalf("retry: %d %s", st, b)
	}
	if st, b := call("POST", "/v1/videos/"+id+"/retry", ""); st != 409 {
		t.Fatalf("second retry: %d %s", st, b)
	}
	v := wait(domain.StatusCompleted)
	if v.PlaylistURL == nil || v.ErrorMessage != nil || len(v.Resolutions) == 0 {
		t.Fatalf("completed video: %+v", v)
	}
	resp, err := http.Get(*v.PlaylistURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("playlist after retry: %d", resp.StatusCode)
	}
	_, b = call("GET", "/v1/videos/"+id+"/events", "")
	var evs wire.Events
	if err := json.Unmarshal(b, &evs); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range evs.Events {
		switch e.Type {
		case domain.TypeTranscodeFailed, domain.TypeTranscodeRetried, domain.TypeTranscodeSucceeded:
			seen = append(seen, e.Type)
		}
	}
	if strings.Join(seen, ",") != "TranscodeFailed,TranscodeRetried,TranscodeSucceeded" {
		t.Fatalf("history %v", seen)
	}
}
