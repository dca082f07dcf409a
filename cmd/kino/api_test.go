package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

var videoFields = []string{"id", "filename", "status", "duration", "originalSize", "processedSize", "playlistUrl",
	"thumbnailUrl", "previewUrl", "resolutions", "errorMessage", "collection", "createdAt", "updatedAt",
	"progress", // progress and the rest are kino's additions to spec §2
	"playbackPolicy", "storyboardUrl", "downloadUrl", "speed", "eta", "queuePosition"}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func checkTimestamp(t *testing.T, name string, v any) {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(domain.TimeFormat, s)
	if err != nil || !strings.HasSuffix(s, "Z") || len(s) != len("2006-01-02T15:04:05.000Z") || ts.IsZero() {
		t.Fatalf("%s = %v: want ISO 8601 UTC with milliseconds", name, v)
	}
}

func TestUploadListGetDelete(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "trailers", "name": "Trailers"}), 201)
	data := clip(t)

	up := h.upload(key, "trailers", "My Trailer.MP4", data)
	wantStatus(t, up, 202)
	body := up.json(t)
	if body["message"] == "" || len(body) != 2 {
		t.Fatalf("upload body: %s", up.body)
	}
	v := body["video"].(map[string]any)
	id, _ := v["id"].(string)
	if !domain.ValidID(id) || v["filename"] != "My Trailer.MP4" || v["status"] != "PENDING" || v["collection"] != "trailers" || len(v) != 4 {
		t.Fatalf("upload video: %s", up.body)
	}

	// A GET right after the POST sees the write, with every field of spec §2.
	got := h.do("GET", "/v1/videos/"+id, key, nil)
	wantStatus(t, got, 200)
	rec := got.json(t)
	if !slices.Equal(keys(rec), func() []string { s := slices.Clone(videoFields); sort.Strings(s); return s }()) {
		t.Fatalf("video fields %v, want %v", keys(rec), videoFields)
	}
	for _, f := range []string{"duration", "processedSize", "playlistUrl", "thumbnailUrl", "previewUrl", "errorMessage"} {
		if rec[f] != nil {
			t.Errorf("%s = %v, want null while PENDING", f, rec[f])
		}
	}
	if rec["id"] != id || rec["status"] != "PENDING" || rec["filename"] != "My Trailer.MP4" {
		t.Fatalf("video: %s", got.body)
	}
	if rec["originalSize"] != float64(len(data)) {
		t.Fatalf("originalSize %v, want %d", rec["originalSize"], len(data))
	}
	if res, ok := rec["resolutions"].([]any); !ok || len(res) != 0 {
		t.Fatalf("resolutions %v, want []", rec["resolutions"])
	}
	if c := rec["collection"].(map[string]any); c["slug"] != "trailers" || c["name"] != "Trailers" || len(c) != 2 {
		t.Fatalf("collection %v", rec["collection"])
	}
	checkTimestamp(t, "createdAt", rec["createdAt"])
	checkTimestamp(t, "updatedAt", rec["updatedAt"])

	// The original is stored under <data>/media/<id>/, byte for byte.
	stored, err := os.ReadFile(filepath.Join(h.data, "media", id, "original.mp4"))
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("stored original: %v (equal=%v)", err, bytes.Equal(stored, data))
	}

	// More videos, in two collections, listed newest first.
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "clips", "name": "Clips"}), 201)
	ids := []string{id}
	for i, coll := range []string{"clips", "trailers", "clips"} {
		r := h.upload(key, coll, fmt.Sprintf("v%d.webm", i), data)
		wantStatus(t, r, 202)
		ids = append(ids, r.json(t)["video"].(map[string]any)["id"].(string))
	}
	list := func(query string) []string {
		t.Helper()
		r := h.do("GET", "/v1/videos"+query, key, nil)
		wantStatus(t, r, 200)
		var body struct {
			Videos []map[string]any `json:"videos"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil || body.Videos == nil {
			t.Fatalf("list body: %v %s", err, r.body)
		}
		var out []string
		for _, v := range body.Videos {
			if len(v) != len(videoFields) {
				t.Fatalf("list entry is not a full Video: %v", v)
			}
			out = append(out, v["id"].(string))
		}
		return out
	}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"", []string{ids[3], ids[2], ids[1], ids[0]}},
		{"?limit=2", []string{ids[3], ids[2]}},
		{"?limit=2&offset=2", []string{ids[1], ids[0]}},
		{"?offset=4", nil},
		{"?collection=trailers", []string{ids[2], ids[0]}},
		{"?collection=clips&limit=1&offset=1", []string{ids[1]}},
		{"?status=PENDING", []string{ids[3], ids[2], ids[1], ids[0]}},
		{"?status=COMPLETED", nil},
		{"?collection=nope", nil},
		{"?limit=100&offset=0", []string{ids[3], ids[2], ids[1], ids[0]}},
	} {
		if got := list(tt.query); !slices.Equal(got, tt.want) {
			t.Errorf("GET /v1/videos%s = %v, want %v", tt.query, got, tt.want)
		}
	}

	// Delete: the record and its files go; the second delete is 404.
	del := h.do("DELETE", "/v1/videos/"+id, key, nil)
	wantStatus(t, del, 200)
	if m := del.json(t); m["message"] == "" || len(m) != 1 {
		t.Fatalf("delete body %s", del.body)
	}
	wantError(t, h.do("GET", "/v1/videos/"+id, key, nil), 404, "Not found")
	wantError(t, h.do("DELETE", "/v1/videos/"+id, key, nil), 404, "Not found")
	if _, err := os.Stat(filepath.Join(h.data, "media", id)); !os.IsNotExist(err) {
		t.Fatalf("files of deleted video remain: %v", err)
	}
	if got := list(""); slices.Contains(got, id) {
		t.Fatal("deleted video still listed")
	}
	// The history stays: the deletion is an event.
	hist := h.mustCLI("history", id)
	if !strings.Contains(hist, "UploadAccepted") || !strings.Contains(hist, "Deleted") {
		t.Fatalf("history:\n%s", hist)
	}
	wantError(t, h.do("GET", "/v1/videos/not-an-id", key, nil), 404, "Not found")
	wantError(t, h.do("GET", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV", key, nil), 404, "Not found")
}

func TestListRejectsBadParameters(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)
	for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=abc", "limit=", "limit=1.5", "offset=-1", "offset=x",
		"status=DONE", "status=pending", "status=", "collection=Bad_Slug", "limit=1&limit=2"} {
		t.Run(q, func(t *testing.T) {
			r := h.do("GET", "/v1/videos?"+q, key, nil)
			wantError(t, r, 400, "Bad request")
			param := strings.SplitN(q, "=", 2)[0]
			if !strings.Contains(r.json(t)["message"].(string), param) {
				t.Fatalf("message does not name %s: %s", param, r.body)
			}
		})
	}
}

func TestUploadBadInput(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanFree) // 256 KiB uploads in tests
	other := h.account("other", domain.PlanFree)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	wantStatus(t, h.do("POST", "/v1/collections", other, map[string]string{"slug": "theirs", "name": "Theirs"}), 201)
	data := clip(t)

	tests := []struct {
		name, coll, filename string
		file                 []byte
		status               int
		label                string
	}{
		{"no file", "main", "", nil, 400, "Bad request"},
		{"no collection", "", "a.mp4", data, 400, "Bad request"},
		{"unknown collection", "nope", "a.mp4", data, 404, "Not found"},
		{"another account's collection", "theirs", "a.mp4", data, 404, "Not found"},
		{"txt", "main", "notes.txt", []byte("hello"), 415, "Unsupported media type"},
		{"no extension", "main", "video", data, 415, "Unsupported media type"},
		{"zero bytes", "main", "empty.mp4", []byte{}, 400, "Bad request"},
		{"over the plan's size", "main", "big.mp4", notAVideo(300 << 10), 413, "File too large"},
		{"NUL in filename", "main", "a\x00b.mp4", data, 400, "Bad request"},
		{"300-character filename", "main", strings.Repeat("a", 296) + ".mp4", data, 400, "Bad request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, h.upload(key, tt.coll, tt.filename, tt.file), tt.status, tt.label)
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		wantError(t, h.request("POST", "/v1/videos", key, "application/octet-stream", bytes.NewReader(data)), 400, "Bad request")
	})
	t.Run("truncated multipart", func(t *testing.T) {
		body := "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\n\r\nabc"
		wantError(t, h.request("POST", "/v1/videos", key, "multipart/form-data; boundary=xyz", strings.NewReader(body)), 400, "Bad request")
	})

	// Nothing half-written: no files, nothing in flight, no events.
	videos, incoming := h.mediaEntries()
	if len(videos) != 0 || len(incoming) != 0 {
		t.Fatalf("rejected uploads left files: videos %v, incoming %v", videos, incoming)
	}
	if out := h.mustCLI("keys", "list", "acme"); !strings.Contains(out, "active") {
		t.Fatal(out)
	}
	if n := countEvents(t, h, "video.*.UploadAccepted"); n != 0 {
		t.Fatalf("%d UploadAccepted events from rejected uploads", n)
	}

	// A path in the filename is kept for display only, as its last element.
	r := h.upload(key, "main", "../../etc/passwd.mp4", data)
	wantStatus(t, r, 202)
	id := r.json(t)["video"].(map[string]any)["id"].(string)
	if fn := r.json(t)["video"].(map[string]any)["filename"]; fn != "passwd.mp4" {
		t.Fatalf("filename %v", fn)
	}
	if _, err := os.Stat(filepath.Join(h.data, "media", id, "original.mp4")); err != nil {
		t.Fatal(err)
	}
	videos, _ = h.mediaEntries()
	if !slices.Equal(videos, []string{id}) {
		t.Fatalf("media holds %v, want only %s", videos, id)
	}
}

func TestUploadDoesNotBufferInMemory(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("big", domain.PlanBusiness) // 512 MiB in tests
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	const size = 64 << 20
	body, contentType := streamingUpload("main", "big.mp4", size)
	before := totalAlloc()
	r := h.request("POST", "/v1/videos", key, contentType, body)
	allocated := totalAlloc() - before
	wantStatus(t, r, 202)
	// Client and server share this process: together they must allocate
	// far less than the file (the server streams through a 1 MiB buffer).
	if allocated > 16<<20 {
		t.Fatalf("a %d MiB upload allocated %d MiB: it is being buffered", size>>20, allocated>>20)
	}
	id := r.json(t)["video"].(map[string]any)["id"].(string)
	if fi, err := os.Stat(filepath.Join(h.data, "media", id, "original.mp4")); err != nil || fi.Size() != size {
		t.Fatalf("stored original: %v", err)
	}
}

func TestCollections(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)

	r := h.do("POST", "/v1/collections", key, `{"slug":"news","name":"  News  ","color":"red"}`) // unknown fields ignored
	wantStatus(t, r, 201)
	c := r.json(t)
	if c["slug"] != "news" || c["name"] != "News" || c["videoCount"] != float64(0) {
		t.Fatalf("created %s", r.body)
	}
	checkTimestamp(t, "createdAt", c["createdAt"])

	for _, tt := range []struct {
		name, body string
		status     int
		label      string
	}{
		{"duplicate", `{"slug":"news","name":"Again"}`, 409, "Conflict"},
		{"uppercase slug", `{"slug":"News","name":"x"}`, 400, "Bad request"},
		{"leading dash", `{"slug":"-news","name":"x"}`, 400, "Bad request"},
		{"64 characters", `{"slug":"` + strings.Repeat("a", 64) + `","name":"x"}`, 400, "Bad request"},
		{"dot in slug", `{"slug":"a.b","name":"x"}`, 400, "Bad request"},
		{"wildcard in slug", `{"slug":"a*","name":"x"}`, 400, "Bad request"},
		{"missing slug", `{"name":"x"}`, 400, "Bad request"},
		{"missing name", `{"slug":"x"}`, 400, "Bad request"},
		{"empty name", `{"slug":"x","name":"  "}`, 400, "Bad request"},
		{"slug not a string", `{"slug":42,"name":"x"}`, 400, "Bad request"},
		{"name not a string", `{"slug":"x","name":["x"]}`, 400, "Bad request"},
		{"malformed JSON", `{"slug":"x",`, 400, "Bad request"},
		{"not an object", `[1,2]`, 400, "Bad request"},
		{"empty body", ``, 400, "Bad request"},
		{"two objects", `{"slug":"x","name":"x"}{}`, 400, "Bad request"},
		{"body too large", `{"slug":"x","name":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "Request too large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, h.do("POST", "/v1/collections", key, tt.body), tt.status, tt.label)
		})
	}
	if r := h.do("POST", "/v1/collections", key, `{"slug":42,"name":"x"}`); !strings.Contains(string(r.body), "slug") {
		t.Fatalf("type error does not name the field: %s", r.body)
	}

	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "arts", "name": "Arts"}), 201)
	r = h.do("GET", "/v1/collections", key, nil)
	wantStatus(t, r, 200)
	var list struct {
		Collections []map[string]any `json:"collections"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Collections) != 2 || list.Collections[0]["slug"] != "arts" {
		t.Fatalf("list: %s", r.body)
	}

	// Rename: the collection and its videos' records follow.
	up := h.upload(key, "news", "a.mp4", clip(t))
	wantStatus(t, up, 202)
	vid := up.json(t)["video"].(map[string]any)["id"].(string)
	r = h.do("PATCH", "/v1/collections/news", key, map[string]string{"name": "World News"})
	wantStatus(t, r, 200)
	if r.json(t)["name"] != "World News" || r.json(t)["videoCount"] != float64(1) {
		t.Fatalf("rename: %s", r.body)
	}
	if c := h.do("GET", "/v1/videos/"+vid, key, nil).json(t)["collection"].(map[string]any); c["name"] != "World News" {
		t.Fatalf("video collection after rename: %v", c)
	}

	// Not empty: 409; emptied: deleted; then gone.
	wantError(t, h.do("DELETE", "/v1/collections/news", key, nil), 409, "Conflict")
	wantStatus(t, h.do("DELETE", "/v1/videos/"+vid, key, nil), 200)
	wantStatus(t, h.do("DELETE", "/v1/collections/news", key, nil), 200)
	wantError(t, h.do("GET", "/v1/collections/news", key, nil), 404, "Not found")
	wantError(t, h.do("DELETE", "/v1/collections/news", key, nil), 404, "Not found")
	wantError(t, h.do("GET", "/v1/collections/NOT_A_SLUG", key, nil), 404, "Not found")
	// The slug can be used again.
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "news", "name": "News 2"}), 201)
}

func TestWebhookSubscriptions(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)
	r := h.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://example.com/hook", "events": []string{"video.failed", "video.completed", "video.failed"}})
	wantStatus(t, r, 201)
	created := r.json(t)
	id, _ := created["id"].(string)
	secret, _ := created["secret"].(string)
	if !domain.ValidID(id) || !strings.HasPrefix(secret, "whsec_") || len(secret) < 38 || created["url"] != "https://example.com/hook" {
		t.Fatalf("created: %s", r.body)
	}
	if ev := created["events"].([]any); len(ev) != 2 || ev[0] != "video.completed" || ev[1] != "video.failed" {
		t.Fatalf("events %v", ev)
	}
	checkTimestamp(t, "createdAt", created["createdAt"])

	got := h.do("GET", "/v1/webhooks/"+id, key, nil)
	wantStatus(t, got, 200)
	if _, ok := got.json(t)["secret"]; ok || bytes.Contains(got.body, []byte(secret)) {
		t.Fatalf("secret shown after creation: %s", got.body)
	}
	list := h.do("GET", "/v1/webhooks", key, nil)
	wantStatus(t, list, 200)
	if bytes.Contains(list.body, []byte(secret)) || !bytes.Contains(list.body, []byte(id)) {
		t.Fatalf("list: %s", list.body)
	}

	for _, tt := range []struct {
		name string
		body any
	}{
		{"no url", map[string]any{"events": []string{"video.completed"}}},
		{"relative url", map[string]any{"url": "/hook", "events": []string{"video.completed"}}},
		{"ftp url", map[string]any{"url": "ftp://example.com/", "events": []string{"video.completed"}}},
		{"credentials in url", map[string]any{"url": "https://u:p@example.com/", "events": []string{"video.completed"}}},
		{"no events", map[string]any{"url": "https://example.com/"}},
		{"empty events", map[string]any{"url": "https://example.com/", "events": []string{}}},
		{"unknown event", map[string]any{"url": "https://example.com/", "events": []string{"video.deleted"}}},
		{"events not a list", map[string]any{"url": "https://example.com/", "events": "video.completed"}},
		{"url not a string", map[string]any{"url": 5, "events": []string{"video.completed"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, h.do("POST", "/v1/webhooks", key, tt.body), 400, "Bad request")
		})
	}

	wantStatus(t, h.do("DELETE", "/v1/webhooks/"+id, key, nil), 200)
	wantError(t, h.do("GET", "/v1/webhooks/"+id, key, nil), 404, "Not found")
	wantError(t, h.do("DELETE", "/v1/webhooks/"+id, key, nil), 404, "Not found")
	wantError(t, h.do("GET", "/v1/webhooks/x.y", key, nil), 404, "Not found")
}

func TestAuthentication(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("GET", "/v1/videos", key, nil), 200)

	missing := h.do("GET", "/v1/videos", "", nil)
	wantError(t, missing, 401, "Missing API key")
	if !strings.Contains(missing.json(t)["message"].(string), "Authorization") || !strings.Contains(missing.json(t)["message"].(string), "Bearer") {
		t.Fatalf("missing-key message: %s", missing.body)
	}
	if missing.header.Get("X-RateLimit-Limit") != "" {
		t.Fatal("unauthenticated response carries rate-limit headers")
	}
	for name, header := range map[string]string{
		"basic scheme": "Basic " + key,
		"no scheme":    key,
		"empty bearer": "Bearer ",
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", h.url+"/v1/videos", nil)
			req.Header.Set("Authorization", header)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Fatalf("status %d", resp.StatusCode)
			}
		})
	}
	invalid := h.do("GET", "/v1/videos", "svc_live_"+strings.Repeat("x", 32), nil)
	wantError(t, invalid, 401, "Invalid API key")
	if invalid.json(t)["message"] != "The API key is invalid or has been revoked" {
		t.Fatalf("invalid-key message: %s", invalid.body)
	}
	wantError(t, h.do("GET", "/v1/videos", "svc_test_abc", nil), 401, "Invalid API key")

	// Rotation: a second key works; the revoked one is invalid at once.
	second := lastLine(h.mustCLI("keys", "create", "acme", "--label", "rotated"))
	wantStatus(t, h.do("GET", "/v1/videos", second, nil), 200)
	list := h.mustCLI("keys", "list", "acme")
	var keyID string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "test") {
			keyID = strings.Fields(line)[0]
		}
	}
	if keyID == "" || strings.Contains(list, key) || strings.Contains(list, second) {
		t.Fatalf("keys list (must never show a key):\n%s", list)
	}
	h.mustCLI("keys", "revoke", keyID)
	wantError(t, h.do("GET", "/v1/videos", key, nil), 401, "Invalid API key")
	wantStatus(t, h.do("GET", "/v1/videos", second, nil), 200)
	if out := h.mustCLI("keys", "list", "acme"); !strings.Contains(out, "revoked") {
		t.Fatalf("keys list after revoke:\n%s", out)
	}
	// Keys are stored hashed: the key itself is in no stored event.
	if n := countEventsContaining(t, h, key); n != 0 {
		t.Fatalf("the key appears in %d stored events", n)
	}
}

func TestRateLimit(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("free", domain.PlanFree)
	second := lastLine(h.mustCLI("keys", "create", "free")) // all keys share the account's budget
	h.now.Set(time.Date(2026, 11, 22, 12, 0, 15, 0, time.UTC))
	// A sliding window: Reset is when the oldest counted request leaves
	// it, one minute after it was made.
	reset := strconv.FormatInt(time.Date(2026, 11, 22, 12, 1, 15, 0, time.UTC).Unix(), 10)
	for i := 1; i <= 60; i++ {
		k := key
		if i%2 == 0 {
			k = second
		}
		r := h.do("GET", "/v1/videos", k, nil)
		wantStatus(t, r, 200)
		if r.header.Get("X-RateLimit-Limit") != "60" || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(60-i) || r.header.Get("X-RateLimit-Reset") != reset {
			t.Fatalf("request %d headers: limit %q remaining %q reset %q", i, r.header.Get("X-RateLimit-Limit"),
				r.header.Get("X-RateLimit-Remaining"), r.header.Get("X-RateLimit-Reset"))
		}
	}
	r := h.do("GET", "/v1/videos", key, nil)
	wantError(t, r, 429, "Rate limit exceeded")
	if r.header.Get("Retry-After") != "60" || r.header.Get("X-RateLimit-Remaining") != "0" || r.header.Get("X-RateLimit-Limit") != "60" {
		t.Fatalf("429 headers: %v", r.header)
	}
	if !strings.Contains(r.json(t)["message"].(string), "retry after") {
		t.Fatalf("429 message: %s", r.body)
	}
	// Headers are spelled as the spec spells them.
	raw := rawHeaders(t, h.url+"/v1/videos", key)
	if !strings.Contains(raw, "X-RateLimit-Limit: 60") {
		t.Fatalf("raw headers:\n%s", raw)
	}
	// Another account is not affected. A minute boundary frees nothing:
	// the window slides, so the requests of 12:00:15 count until 12:01:15.
	other := h.account("other", domain.PlanBusiness)
	if r := h.do("GET", "/v1/videos", other, nil); r.status != 200 || r.header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("other account: %d %v", r.status, r.header)
	}
	h.now.Set(time.Date(2026, 11, 22, 12, 1, 0, 0, time.UTC))
	r = h.do("GET", "/v1/videos", key, nil)
	wantError(t, r, 429, "Rate limit exceeded")
	if r.header.Get("Retry-After") != "15" {
		t.Fatalf("429 after the minute boundary: %v", r.header)
	}
	h.now.Set(time.Date(2026, 11, 22, 12, 1, 15, 0, time.UTC))
	if r := h.do("GET", "/v1/videos", key, nil); r.status != 200 || r.header.Get("X-RateLimit-Remaining") != "59" {
		t.Fatalf("a minute later: %d %v", r.status, r.header)
	}
}

func TestAccountsAreIsolated(t *testing.T) {
	h := start(t, t.TempDir())
	a := h.account("alpha", domain.PlanPro)
	b := h.account("beta", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", a, map[string]string{"slug": "main", "name": "A main"}), 201)
	up := h.upload(a, "main", "a.mp4", clip(t))
	wantStatus(t, up, 202)
	vid := up.json(t)["video"].(map[string]any)["id"].(string)
	wh := h.do("POST", "/v1/webhooks", a, map[string]any{"url": "https://a.example/hook", "events": []string{"video.completed"}})
	wantStatus(t, wh, 201)
	hookID := wh.json(t)["id"].(string)

	for _, path := range []string{"/v1/videos/" + vid, "/v1/collections/main", "/v1/webhooks/" + hookID} {
		wantError(t, h.do("GET", path, b, nil), 404, "Not found")
		wantError(t, h.do("DELETE", path, b, nil), 404, "Not found")
	}
	wantError(t, h.do("PATCH", "/v1/collections/main", b, map[string]string{"name": "x"}), 404, "Not found")
	for _, path := range []string{"/v1/videos", "/v1/collections", "/v1/webhooks"} {
		r := h.do("GET", path, b, nil)
		wantStatus(t, r, 200)
		if bytes.Contains(r.body, []byte(vid)) || bytes.Contains(r.body, []byte(hookID)) || bytes.Contains(r.body, []byte("A main")) {
			t.Fatalf("%s leaks account alpha's data: %s", path, r.body)
		}
	}
	// B may use the same slug; A's stays intact.
	wantStatus(t, h.do("POST", "/v1/collections", b, map[string]string{"slug": "main", "name": "B main"}), 201)
	wantStatus(t, h.do("GET", "/v1/videos/"+vid, a, nil), 200)
	if h.do("GET", "/v1/collections/main", a, nil).json(t)["name"] != "A main" {
		t.Fatal("account alpha's collection changed")
	}
}

func TestRestartKeepsEverything(t *testing.T) {
	data := t.TempDir()
	h := start(t, data)
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	up := h.upload(key, "main", "a.mp4", clip(t))
	wantStatus(t, up, 202)
	vid := up.json(t)["video"].(map[string]any)["id"].(string)
	before := h.do("GET", "/v1/videos/"+vid, key, nil)
	h.stop()

	h = start(t, data)
	after := h.do("GET", "/v1/videos/"+vid, key, nil)
	wantStatus(t, after, 200)
	if !bytes.Equal(before.body, after.body) {
		t.Fatalf("video changed across a restart:\n%s\n%s", before.body, after.body)
	}
	h.stop()

	// The read models are derived: without them, a start rebuilds them
	// from the stream.
	if err := os.Remove(filepath.Join(data, "projections.db")); err != nil {
		t.Fatal(err)
	}
	h = start(t, data)
	rebuilt := h.do("GET", "/v1/videos/"+vid, key, nil)
	if !bytes.Equal(before.body, rebuilt.body) {
		t.Fatalf("rebuilt video differs:\n%s\n%s", before.body, rebuilt.body)
	}
	if _, err := os.Stat(filepath.Join(data, "media", vid, "original.mp4")); err != nil {
		t.Fatal(err)
	}
}

func TestDevBootstrapOnlyOnEmptyStore(t *testing.T) {
	data := t.TempDir()
	var out bytes.Buffer
	h := start(t, data, func(c *Config) { c.Dev, c.Stdout = true, &out })
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("--dev printed %q", out.String())
	}
	key := lines[1]
	if !domain.WellFormedKey(key) || h.m.DevKey != key {
		t.Fatalf("--dev printed %q", out.String())
	}
	// The dashboard user's one-time link sets its password and logs in.
	link, err := url.Parse(lines[3])
	if err != nil || link.Path != "/password" || link.Query().Get("token") == "" {
		t.Fatalf("--dev printed no password link: %q", out.String())
	}
	pw := h.do("POST", "/auth/password", "", map[string]string{"token": link.Query().Get("token"), "password": "a long enough password"})
	if pw.status != 200 || !strings.Contains(string(pw.body), DevUserEmail) {
		t.Fatalf("the dev user's link: %d %s", pw.status, pw.body)
	}
	r := h.do("GET", "/v1/collections/default", key, nil)
	wantStatus(t, r, 200)
	if r := h.upload(key, "default", "a.mp4", clip(t)); r.status != 202 {
		t.Fatalf("upload with dev key: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/v1/videos", key, nil); r.header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatal("dev account is not on the business plan")
	}
	h.stop()
	out.Reset()
	h = start(t, data, func(c *Config) { c.Dev, c.Stdout = true, &out })
	if out.Len() != 0 || h.m.DevKey != "" {
		t.Fatalf("second --dev start printed %q", out.String())
	}
	wantStatus(t, h.do("GET", "/v1/videos", key, nil), 200)
}

func TestRoutingAndHealth(t *testing.T) {
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)
	r := h.do("GET", "/healthz", "", nil)
	wantStatus(t, r, 200)
	// Readiness, wired to the embedded server, the media directory and the disk.
	if r := h.do("GET", "/readyz", "", nil); r.status != 200 || !strings.Contains(string(r.body), `"status":"ready"`) {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	for _, r := range []response{h.do("GET", "/v1/nothing", key, nil), h.do("PUT", "/v1/videos", key, nil)} {
		if r.header.Get("X-Request-Id") == "" {
			t.Fatalf("%d without X-Request-Id", r.status)
		}
	}
	wantError(t, h.do("GET", "/v1/nothing", key, nil), 404, "Not found")
	wantError(t, h.do("PUT", "/v1/videos", key, nil), 405, "Method not allowed")
	if r := h.do("GET", "/v1/videos", key, nil); r.header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
}

// With --nats, serve embeds nothing and uses the given server.
func TestServeAgainstExternalNATS(t *testing.T) {
	srv := eventstoretest.Server(t, t.TempDir())
	data := t.TempDir()
	h := start(t, data, func(c *Config) { c.NATSURL, c.NATSAuth = srv.URL(), srv.Auth(eventstore.RoleServe) })
	if h.nats != srv.URL() {
		t.Fatalf("serve uses %s, want %s", h.nats, srv.URL())
	}
	if _, err := os.Stat(filepath.Join(data, "nats")); !os.IsNotExist(err) {
		t.Fatalf("an embedded store was created: %v", err)
	}
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	wantStatus(t, h.upload(key, "main", "a.mp4", clip(t)), 202)
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	h := start(t, t.TempDir())
	r := h.do("GET", "/v1/openapi.json", "", nil)
	wantStatus(t, r, 200)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json: %v %s", err, r.body[:min(200, len(r.body))])
	}
	for _, p := range []string{"/videos", "/videos/{id}", "/videos/{id}/events", "/collections/{slug}", "/webhooks/{id}/deliveries", "/admin/replay"} {
		if doc.Paths[p] == nil {
			t.Errorf("the document lacks %s", p)
		}
	}
}
