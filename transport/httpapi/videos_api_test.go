package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

func TestUploadListGetDelete(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)
	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "trailers", "name": "Trailers"}), 201)
	data := clip(t)

	up := a.Upload(key, "trailers", "My Trailer.MP4", data)
	wantStatus(t, up, 202)
	body := up.JSON(t)
	if body["message"] == "" || len(body) != 2 {
		t.Fatalf("upload body: %s", up.Body)
	}
	v := body["video"].(map[string]any)
	id, _ := v["id"].(string)
	if !domain.ValidID(id) || v["filename"] != "My Trailer.MP4" || v["status"] != "PENDING" || v["collection"] != "trailers" || len(v) != 4 {
		t.Fatalf("upload video: %s", up.Body)
	}

	// A GET right after the POST sees the write, with every field of spec §2.
	got := a.Do("GET", "/v1/videos/"+id, key, nil)
	wantStatus(t, got, 200)
	rec := got.JSON(t)
	if !slices.Equal(keys(rec), func() []string { s := slices.Clone(videoFields); sort.Strings(s); return s }()) {
		t.Fatalf("video fields %v, want %v", keys(rec), videoFields)
	}
	for _, f := range []string{"duration", "processedSize", "playlistUrl", "thumbnailUrl", "previewUrl", "errorMessage"} {
		if rec[f] != nil {
			t.Errorf("%s = %v, want null while PENDING", f, rec[f])
		}
	}
	if rec["id"] != id || rec["status"] != "PENDING" || rec["filename"] != "My Trailer.MP4" {
		t.Fatalf("video: %s", got.Body)
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

	// The original is stored under <media>/<id>/, byte for byte.
	stored, err := os.ReadFile(filepath.Join(a.MediaDir(), id, "original.mp4"))
	if err != nil || !bytes.Equal(stored, data) {
		t.Fatalf("stored original: %v (equal=%v)", err, bytes.Equal(stored, data))
	}

	// More videos, in two collections, listed newest first.
	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "clips", "name": "Clips"}), 201)
	ids := []string{id}
	for i, coll := range []string{"clips", "trailers", "clips"} {
		r := a.Upload(key, coll, fmt.Sprintf("v%d.webm", i), data)
		wantStatus(t, r, 202)
		ids = append(ids, r.JSON(t)["video"].(map[string]any)["id"].(string))
	}
	list := func(query string) []string {
		t.Helper()
		r := a.Do("GET", "/v1/videos"+query, key, nil)
		wantStatus(t, r, 200)
		var body struct {
			Videos []map[string]any `json:"videos"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Videos == nil {
			t.Fatalf("list body: %v %s", err, r.Body)
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
	del := a.Do("DELETE", "/v1/videos/"+id, key, nil)
	wantStatus(t, del, 200)
	if m := del.JSON(t); m["message"] == "" || len(m) != 1 {
		t.Fatalf("delete body %s", del.Body)
	}
	wantError(t, a.Do("GET", "/v1/videos/"+id, key, nil), 404, "Not found")
	wantError(t, a.Do("DELETE", "/v1/videos/"+id, key, nil), 404, "Not found")
	if _, err := os.Stat(filepath.Join(a.MediaDir(), id)); !os.IsNotExist(err) {
		t.Fatalf("files of deleted video remain: %v", err)
	}
	if got := list(""); slices.Contains(got, id) {
		t.Fatal("deleted video still listed")
	}
	// The history stays: the deletion is an event.
	events, _, err := a.Store.Load(context.Background(), domain.StreamID{Aggregate: domain.AggVideo, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	if len(types) < 2 || types[0] != "UploadAccepted" || types[len(types)-1] != "Deleted" {
		t.Fatalf("history: %v", types)
	}
	wantError(t, a.Do("GET", "/v1/videos/not-an-id", key, nil), 404, "Not found")
	wantError(t, a.Do("GET", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV", key, nil), 404, "Not found")
}

func TestListRejectsBadParameters(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)
	for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=abc", "limit=", "limit=1.5", "offset=-1", "offset=x",
		"status=DONE", "status=pending", "status=", "collection=Bad_Slug", "limit=1&limit=2"} {
		t.Run(q, func(t *testing.T) {
			r := a.Do("GET", "/v1/videos?"+q, key, nil)
			wantError(t, r, 400, "Bad request")
			param := strings.SplitN(q, "=", 2)[0]
			if !strings.Contains(r.JSON(t)["message"].(string), param) {
				t.Fatalf("message does not name %s: %s", param, r.Body)
			}
		})
	}
}

// mediaEntries lists the video directories of the media directory, and
// what lies in its incoming, tus and work directories.
func mediaEntries(t *testing.T, a api) (videos []string, incoming []string) {
	t.Helper()
	es, err := os.ReadDir(a.MediaDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") {
			videos = append(videos, e.Name())
		}
	}
	err = filepath.WalkDir(a.MediaDir(), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a.MediaDir(), path)
		if !d.IsDir() && strings.HasPrefix(rel, ".") {
			incoming = append(incoming, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return videos, incoming
}

func TestUploadBadInput(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanFree) // 256 KiB uploads in tests
	other := a.Account("other", domain.PlanFree)
	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	wantStatus(t, a.Do("POST", "/v1/collections", other, map[string]string{"slug": "theirs", "name": "Theirs"}), 201)
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
		{"over the plan's size", "main", "big.mp4", httpapitest.NotAVideo(300 << 10), 413, "File too large"},
		{"NUL in filename", "main", "a\x00b.mp4", data, 400, "Bad request"},
		{"300-character filename", "main", strings.Repeat("a", 296) + ".mp4", data, 400, "Bad request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, a.Upload(key, tt.coll, tt.filename, tt.file), tt.status, tt.label)
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		wantError(t, a.Request("POST", "/v1/videos", key, "application/octet-stream", bytes.NewReader(data)), 400, "Bad request")
	})
	t.Run("truncated multipart", func(t *testing.T) {
		body := "--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp4\"\r\n\r\nabc"
		wantError(t, a.Request("POST", "/v1/videos", key, "multipart/form-data; boundary=xyz", strings.NewReader(body)), 400, "Bad request")
	})

	// Nothing half-written: no files, nothing in flight, no events; the
	// key still works.
	videos, incoming := mediaEntries(t, a)
	if len(videos) != 0 || len(incoming) != 0 {
		t.Fatalf("rejected uploads left files: videos %v, incoming %v", videos, incoming)
	}
	wantStatus(t, a.Do("GET", "/v1/videos", key, nil), 200)
	if n := a.events(t, "video.*.UploadAccepted", ""); n != 0 {
		t.Fatalf("%d UploadAccepted events from rejected uploads", n)
	}

	// A path in the filename is kept for display only, as its last element.
	r := a.Upload(key, "main", "../../etc/passwd.mp4", data)
	wantStatus(t, r, 202)
	id := r.JSON(t)["video"].(map[string]any)["id"].(string)
	if fn := r.JSON(t)["video"].(map[string]any)["filename"]; fn != "passwd.mp4" {
		t.Fatalf("filename %v", fn)
	}
	if _, err := os.Stat(filepath.Join(a.MediaDir(), id, "original.mp4")); err != nil {
		t.Fatal(err)
	}
	videos, _ = mediaEntries(t, a)
	if !slices.Equal(videos, []string{id}) {
		t.Fatalf("media holds %v, want only %s", videos, id)
	}
}

func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// Not parallel: it counts what the whole process allocates, so no other
// test may run beside it.
func TestUploadDoesNotBufferInMemory(t *testing.T) {
	a := startAPI(t)
	key := a.Account("big", domain.PlanBusiness) // 512 MiB in tests
	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	const size = 64 << 20
	body, contentType := streamingUpload("main", "big.mp4", size)
	before := totalAlloc()
	r := a.Request("POST", "/v1/videos", key, contentType, body)
	allocated := totalAlloc() - before
	wantStatus(t, r, 202)
	// Client and server share this process: together they must allocate
	// far less than the file (the server streams through a 1 MiB buffer).
	if allocated > 16<<20 {
		t.Fatalf("a %d MiB upload allocated %d MiB: it is being buffered", size>>20, allocated>>20)
	}
	id := r.JSON(t)["video"].(map[string]any)["id"].(string)
	if fi, err := os.Stat(filepath.Join(a.MediaDir(), id, "original.mp4")); err != nil || fi.Size() != size {
		t.Fatalf("stored original: %v", err)
	}
}
