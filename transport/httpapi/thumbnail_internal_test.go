package httpapi

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/tus/tustest"
)

// thumbnailTime comes with a multipart upload or tus metadata and shows on
// the video; PATCH changes it within a COMPLETED video's length; every bad
// value is a 400 that stores nothing.
func TestThumbnailTimeAPI(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	upload := func(thumb string) response {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("collection", "main")
		_ = mw.WriteField("thumbnailTime", thumb)
		fw, _ := mw.CreateFormFile("file", "clip.mp4")
		_, _ = fw.Write([]byte("\x00\x00\x00\x18ftypmp42 video"))
		_ = mw.Close()
		req, _ := http.NewRequest("POST", a.srv.URL+"/v1/videos", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return a.request(req, key)
	}
	r := upload("1.25")
	if r.status != 202 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	var up struct{ Video struct{ ID string } }
	_ = json.Unmarshal(r.body, &up)
	if v := a.do("GET", "/v1/videos/"+up.Video.ID, key, ""); !bytes.Contains(v.body, []byte(`"thumbnailTime":1.25,"animatedPreviewUrl":null`)) {
		t.Fatalf("video: %s", v.body)
	}
	for _, bad := range []string{"-1", "abc", "NaN", "Inf", "1e9", ""} {
		if r := upload(bad); r.status != 400 {
			t.Errorf("upload with thumbnailTime %q: %d %s", bad, r.status, r.body)
		}
	}
	tus := a.tus().Tus("POST", tustest.Path, key, map[string]string{"Upload-Length": "100",
		"Upload-Metadata": tustest.Meta("filename", "clip.mp4", "collection", "main", "thumbnailTime", "soon")}, nil)
	if tus.Status != 400 {
		t.Errorf("tus creation with a bad thumbnailTime: %d %s", tus.Status, tus.Body)
	}

	id := a.completedVideo(key) // 1 s long
	if r := a.do("PATCH", "/v1/videos/"+id, key, `{"thumbnailTime":1.5}`); r.status != 400 {
		t.Errorf("past the end: %d %s", r.status, r.body)
	}
	if r := a.do("PATCH", "/v1/videos/"+id, key, `{"thumbnailTime":"0.5"}`); r.status != 400 {
		t.Errorf("a string: %d %s", r.status, r.body)
	}
	if r := a.do("PATCH", "/v1/videos/"+id, key, `{"thumbnailTime":0.5}`); r.status != 200 || !bytes.Contains(r.body, []byte(`"thumbnailTime":0.5`)) {
		t.Errorf("PATCH: %d %s", r.status, r.body)
	}
}
