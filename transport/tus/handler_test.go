package tus_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/tus"
)

// The handler's tests run it as kino serves it, mounted by the API
// (httpapitest: an embedded JetStream server, a bbolt read model, a
// media directory), with the tus directory in a place the test reads.

// api is a running API whose uploads are kept in tusDir, with no public
// base URL configured: Locations are paths.
type api struct {
	t      *testing.T
	k      *httpapitest.Kino
	tusDir string
}

// plans are the default plans, with files of at most 1 MiB.
func plans() domain.Plans {
	p := domain.DefaultPlans()
	for name, l := range p {
		l.MaxUploadBytes = 1 << 20
		p[name] = l
	}
	return p
}

func start(t *testing.T) *api {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tus")
	k := httpapitest.Start(t, httpapitest.Options{Plans: plans(), Configure: func(c *httpapi.Config) {
		c.Uploads.TusDir = dir
		c.Origin.BaseURL = ""
	}})
	return &api{t: t, k: k, tusDir: dir}
}

// account creates an account with one key and a collection "main", and
// returns the key.
func (a *api) account(slug string, plan domain.Plan) string {
	a.t.Helper()
	key := a.k.Account(slug, plan)
	if r := a.do("POST", "/v1/collections", key, `{"slug":"main","name":"Main"}`); r.status != 201 {
		a.t.Fatalf("collection main: %d %s", r.status, r.body)
	}
	return key
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (a *api) request(req *http.Request, key string) response {
	a.t.Helper()
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (a *api) do(method, path, key, body string) response {
	a.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.k.URL+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	return a.request(req, key)
}

// tusReq sends a tus request: Tus-Resumable is set unless hdr says
// otherwise ("" removes it).
func (a *api) tusReq(method, path, key string, hdr map[string]string, body []byte) response {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	url := path
	if strings.HasPrefix(path, "/") {
		url = a.k.URL + path
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", tus.Version)
	if body != nil {
		req.Header.Set("Content-Type", tus.ContentType)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return a.request(req, key)
}

func tusMeta(pairs ...string) string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, pairs[i]+" "+base64.StdEncoding.EncodeToString([]byte(pairs[i+1])))
	}
	return strings.Join(out, ",")
}

// tusCreate creates an upload of n bytes of clip.mp4 into main and
// returns its path (the Location).
func (a *api) tusCreate(key string, n int) string {
	a.t.Helper()
	r := a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": strconv.Itoa(n), "Upload-Metadata": tusMeta("filename", "clip.mp4", "collection", "main")}, nil)
	if r.status != 201 {
		a.t.Fatalf("create: %d %s", r.status, r.body)
	}
	loc := r.header.Get("Location")
	if !strings.HasPrefix(loc, "/v1/uploads/tus/") || r.header.Get("Upload-Offset") != "" && r.header.Get("Upload-Offset") != "0" {
		a.t.Fatalf("create: Location %q, Upload-Offset %q", loc, r.header.Get("Upload-Offset"))
	}
	if r.header.Get("Tus-Resumable") != "1.0.0" || r.header.Get("Upload-Expires") == "" {
		a.t.Fatalf("create: headers %v", r.header)
	}
	return loc
}

func (a *api) tusPatch(path, key string, offset int, chunk []byte, hdr ...string) response {
	a.t.Helper()
	h := map[string]string{"Upload-Offset": strconv.Itoa(offset)}
	for i := 0; i+1 < len(hdr); i += 2 {
		h[hdr[i]] = hdr[i+1]
	}
	return a.tusReq("PATCH", path, key, h, chunk)
}

func (a *api) tusOffset(path, key string) (int, response) {
	a.t.Helper()
	r := a.tusReq("HEAD", path, key, nil, nil)
	n, _ := strconv.Atoi(r.header.Get("Upload-Offset"))
	return n, r
}

// tusFiles lists the tus directory.
func (a *api) tusFiles() []string {
	a.t.Helper()
	es, err := os.ReadDir(a.tusDir)
	if err != nil {
		a.t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// wantVideo checks that video id is readable by key, in main.
func (a *api) wantVideo(key, id, filename string) {
	a.t.Helper()
	r := a.do("GET", "/v1/videos/"+id, key, "")
	if r.status != 200 {
		a.t.Fatalf("GET video %s: %d %s", id, r.status, r.body)
	}
	var v struct {
		ID, Filename, Status string
		Collection           struct{ Slug string }
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		a.t.Fatal(err)
	}
	if v.ID != id || v.Filename != filename || v.Collection.Slug != "main" {
		a.t.Fatalf("video: %s", r.body)
	}
}

// uploadTo is a multipart upload into collection slug.
func (a *api) uploadTo(key, slug, filename string, file []byte) response {
	a.t.Helper()
	body := "--B\r\nContent-Disposition: form-data; name=\"collection\"\r\n\r\n" + slug + "\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + filename + "\"\r\n\r\n" + string(file) + "\r\n--B--\r\n"
	req, err := http.NewRequest("POST", a.k.URL+"/v1/videos", strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
	return a.request(req, key)
}

// clip is a file of n bytes that sniffs as MP4.
func clip(n int) []byte {
	return append([]byte("\x00\x00\x00\x18ftypmp42"), make([]byte, n-12)...)
}

func wantStatus(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

// wantError checks an error answer: its status, and its JSON body, the
// label and a message.
func wantError(t *testing.T, r response, status int, label string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, r.body)
	}
	if m["error"] != label {
		t.Fatalf("error %q, want %q: %s", m["error"], label, r.body)
	}
	if msg, _ := m["message"].(string); msg == "" || len(m) != 2 {
		t.Fatalf("error body must be exactly {error, message}: %s", r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type %q", ct)
	}
}

// Under a configured public base URL, an upload's Location is absolute,
// under that base, and the upload answers there.
func TestTusLocationUnderBaseURL(t *testing.T) {
	k := httpapitest.Start(t, httpapitest.Options{Plans: plans()})
	a := &api{t: t, k: k}
	key := a.account("acme", domain.PlanFree)
	r := a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "clip.mp4", "collection", "main")}, nil)
	loc := r.header.Get("Location")
	if r.status != 201 || !strings.HasPrefix(loc, k.BaseURL+"/uploads/tus/") {
		t.Fatalf("create: %d, Location %q under %q", r.status, loc, k.BaseURL)
	}
	if off, r := a.tusOffset(loc, key); r.status != 200 || off != 0 {
		t.Fatalf("HEAD %s: %d, offset %d", loc, r.status, off)
	}
}

func TestTusOptions(t *testing.T) {
	a := start(t)
	r := a.tusReq("OPTIONS", "/v1/uploads/tus", "", map[string]string{"Tus-Resumable": ""}, nil)
	if r.status != 204 {
		t.Fatalf("OPTIONS: %d %s", r.status, r.body)
	}
	for h, want := range map[string]string{
		"Tus-Resumable": "1.0.0", "Tus-Version": "1.0.0",
		"Tus-Extension":          "creation,creation-with-upload,termination,expiration,checksum",
		"Tus-Checksum-Algorithm": "sha1,md5,sha256,sha512",
	} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if n, err := strconv.ParseInt(r.header.Get("Tus-Max-Size"), 10, 64); err != nil || n != 1<<20 {
		t.Errorf("Tus-Max-Size %q", r.header.Get("Tus-Max-Size"))
	}
}

func TestTusCreationWithUpload(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	r := a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "whole.mp4", "collection", "main")}, file)
	if r.status != 201 || r.header.Get("Upload-Offset") != "3000" {
		t.Fatalf("creation with upload: %d %v %s", r.status, r.header, r.body)
	}
	a.wantVideo(key, strings.TrimPrefix(r.header.Get("Location"), "/v1/uploads/tus/"), "whole.mp4")

	// Part of the file in the creation request, the rest by PATCH.
	r = a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "half.mp4", "collection", "main")}, file[:1500])
	if r.status != 201 || r.header.Get("Upload-Offset") != "1500" {
		t.Fatalf("creation with part: %d %v %s", r.status, r.header, r.body)
	}
	loc := r.header.Get("Location")
	if r := a.tusPatch(loc, key, 1500, file[1500:]); r.status != 204 {
		t.Fatalf("rest: %d %s", r.status, r.body)
	}
	a.wantVideo(key, strings.TrimPrefix(loc, "/v1/uploads/tus/"), "half.mp4")
}

// Creation refuses what a multipart upload refuses, with the same
// statuses, before any byte is sent.
func TestTusCreationChecks(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	meta := tusMeta("filename", "a.mp4", "collection", "main")
	tests := []struct {
		name   string
		hdr    map[string]string
		status int
		label  string
	}{
		{"no Tus-Resumable", map[string]string{"Tus-Resumable": "", "Upload-Length": "10", "Upload-Metadata": meta}, 412, "Precondition failed"},
		{"another tus version", map[string]string{"Tus-Resumable": "0.2.2", "Upload-Length": "10", "Upload-Metadata": meta}, 412, "Precondition failed"},
		{"no Upload-Length", map[string]string{"Upload-Metadata": meta}, 400, "Bad request"},
		{"negative Upload-Length", map[string]string{"Upload-Length": "-1", "Upload-Metadata": meta}, 400, "Bad request"},
		{"deferred length", map[string]string{"Upload-Defer-Length": "1", "Upload-Metadata": meta}, 400, "Bad request"},
		{"empty file", map[string]string{"Upload-Length": "0", "Upload-Metadata": meta}, 400, "Bad request"},
		{"larger than the plan", map[string]string{"Upload-Length": strconv.Itoa(1<<20 + 1), "Upload-Metadata": meta}, 413, "File too large"},
		{"not a video extension", map[string]string{"Upload-Length": "10", "Upload-Metadata": tusMeta("filename", "a.txt", "collection", "main")}, 415, "Unsupported media type"},
		{"unknown collection", map[string]string{"Upload-Length": "10", "Upload-Metadata": tusMeta("filename", "a.mp4", "collection", "nope")}, 404, "Not found"},
		{"no collection", map[string]string{"Upload-Length": "10", "Upload-Metadata": tusMeta("filename", "a.mp4")}, 400, "Bad request"},
		{"no filename", map[string]string{"Upload-Length": "10", "Upload-Metadata": tusMeta("collection", "main")}, 400, "Bad request"},
		{"metadata not base64", map[string]string{"Upload-Length": "10", "Upload-Metadata": "filename !!!,collection bWFpbg=="}, 400, "Bad request"},
		{"metadata key twice", map[string]string{"Upload-Length": "10", "Upload-Metadata": meta + "," + tusMeta("filename", "b.mp4")}, 400, "Bad request"},
		{"bidi in the filename", map[string]string{"Upload-Length": "10", "Upload-Metadata": tusMeta("filename", "evil\u202Evom.mp4", "collection", "main")}, 400, "Bad request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.tusReq("POST", "/v1/uploads/tus", key, tc.hdr, nil)
			wantError(t, r, tc.status, tc.label)
			if tc.status == 412 && r.header.Get("Tus-Version") != "1.0.0" {
				t.Fatalf("412 without Tus-Version: %v", r.header)
			}
		})
	}
	// The same collection a multipart upload is refused for: the same answer.
	wantError(t, a.uploadTo(key, "nope", "a.mp4", clip(22)), 404, "Not found")
	wantError(t, a.tusReq("POST", "/v1/uploads/tus", "", map[string]string{"Upload-Length": "10", "Upload-Metadata": meta}, nil), 401, respond.LabelMissingKey)
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("refused creations left %v", files)
	}
}

func TestTusPatchChecks(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(4000)
	loc := a.tusCreate(key, len(file))
	if r := a.tusPatch(loc, key, 0, file[:1000]); r.status != 204 {
		t.Fatalf("first chunk: %d %s", r.status, r.body)
	}
	sha := func(b []byte) string {
		s := sha256.Sum256(b)
		return "sha256 " + base64.StdEncoding.EncodeToString(s[:])
	}
	tests := []struct {
		name   string
		r      func() response
		status int
		label  string
	}{
		{"offset behind", func() response { return a.tusPatch(loc, key, 0, file[:1000]) }, 409, "Conflict"},
		{"offset ahead", func() response { return a.tusPatch(loc, key, 2000, file[2000:3000]) }, 409, "Conflict"},
		{"no offset", func() response {
			return a.tusReq("PATCH", loc, key, nil, file[1000:2000])
		}, 400, "Bad request"},
		{"wrong content type", func() response {
			return a.tusPatch(loc, key, 1000, file[1000:2000], "Content-Type", "application/octet-stream")
		}, 415, "Unsupported media type"},
		{"checksum mismatch", func() response {
			return a.tusPatch(loc, key, 1000, file[1000:2000], "Upload-Checksum", sha(file[:1000]))
		}, 460, "Checksum mismatch"},
		{"unsupported checksum", func() response {
			return a.tusPatch(loc, key, 1000, file[1000:2000], "Upload-Checksum", "crc32 AAAAAA==")
		}, 400, "Bad request"},
		{"malformed checksum", func() response {
			return a.tusPatch(loc, key, 1000, file[1000:2000], "Upload-Checksum", "sha256 abc")
		}, 400, "Bad request"},
		{"past Upload-Length", func() response {
			return a.tusPatch(loc, key, 1000, append(append([]byte{}, file[1000:]...), 1, 2, 3))
		}, 413, "Request too large"},
		{"no Tus-Resumable", func() response {
			return a.tusPatch(loc, key, 1000, file[1000:2000], "Tus-Resumable", "")
		}, 412, "Precondition failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.r(), tc.status, tc.label)
			if off, _ := a.tusOffset(loc, key); off != 1000 {
				t.Fatalf("offset after a refused chunk: %d, want 1000", off)
			}
			if fi, err := os.Stat(filepath.Join(a.tusDir, strings.TrimPrefix(loc, "/v1/uploads/tus/")+".bin")); err != nil || fi.Size() != 1000 {
				t.Fatalf("partial file after a refused chunk: %v %v", fi, err)
			}
		})
	}
	if r := a.tusPatch(loc, key, 1000, file[1000:], "Upload-Checksum", sha(file[1000:])); r.status != 204 {
		t.Fatalf("chunk with a right checksum: %d %s", r.status, r.body)
	}
	a.wantVideo(key, strings.TrimPrefix(loc, "/v1/uploads/tus/"), "clip.mp4")
}

// Another account's upload does not exist for it: 404 on every method,
// and the upload is untouched.
func TestTusOtherAccountGets404(t *testing.T) {
	a := start(t)
	keyA := a.account("alpha", domain.PlanFree)
	keyB := a.account("beta", domain.PlanFree)
	file := clip(2000)
	loc := a.tusCreate(keyA, len(file))
	wantStatus(t, a.tusReq("HEAD", loc, keyB, nil, nil), 404)
	wantError(t, a.tusPatch(loc, keyB, 0, file), 404, "Not found")
	wantError(t, a.tusReq("DELETE", loc, keyB, nil, nil), 404, "Not found")
	wantStatus(t, a.tusReq("HEAD", "/v1/uploads/tus/01JZZZZZZZZZZZZZZZZZZZZZZZ", keyA, nil, nil), 404)
	if r := a.tusPatch(loc, keyA, 0, file); r.status != 204 {
		t.Fatalf("owner's PATCH: %d %s", r.status, r.body)
	}
}

// A not-a-video is refused as soon as its first bytes are in, and the
// upload is gone.
func TestTusNotAVideoAtFirstChunk(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	text := []byte(strings.Repeat("#EXTM3U not a video\n", 200))
	loc := a.tusCreate(key, len(text))
	// A first chunk shorter than what the sniffer reads is kept until
	// there is enough to look at.
	if r := a.tusPatch(loc, key, 0, text[:100]); r.status != 204 {
		t.Fatalf("short first chunk: %d %s", r.status, r.body)
	}
	wantError(t, a.tusPatch(loc, key, 100, text[100:2000]), 415, "Unsupported media type")
	if r := a.tusReq("HEAD", loc, key, nil, nil); r.status != 404 {
		t.Fatalf("refused upload still answers HEAD: %d", r.status)
	}
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("refused upload left %v", files)
	}
	// In the creation request itself.
	r := a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": strconv.Itoa(len(text)), "Upload-Metadata": tusMeta("filename", "a.mp4", "collection", "main")}, text)
	wantError(t, r, 415, "Unsupported media type")
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("refused upload left %v", files)
	}
}

func TestTusTermination(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	loc := a.tusCreate(key, len(file))
	if r := a.tusPatch(loc, key, 0, file[:1500]); r.status != 204 {
		t.Fatalf("PATCH: %d", r.status)
	}
	if r := a.tusReq("DELETE", loc, key, nil, nil); r.status != 204 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("terminated upload left %v", files)
	}
	wantError(t, a.tusPatch(loc, key, 1500, file[1500:]), 404, "Not found")
	if r := a.do("GET", "/v1/videos/"+strings.TrimPrefix(loc, "/v1/uploads/tus/"), key, ""); r.status != 404 {
		t.Fatalf("terminated upload became a video: %d", r.status)
	}
}

// An account holds at most maxUnfinished unfinished uploads.
func TestTusUnfinishedUploadsAreCapped(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	other := a.account("other", domain.PlanFree)
	most := tus.MaxUnfinished(plans().Limits(domain.PlanFree))
	var locs []string
	for range most {
		locs = append(locs, a.tusCreate(key, 1000))
	}
	r := a.tusReq("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "1000", "Upload-Metadata": tusMeta("filename", "a.mp4", "collection", "main")}, nil)
	wantError(t, r, 429, respond.LabelRateLimited)
	a.tusCreate(other, 1000) // another account is not held back
	if r := a.tusReq("DELETE", locs[0], key, nil, nil); r.status != 204 {
		t.Fatalf("DELETE: %d", r.status)
	}
	a.tusCreate(key, 1000)
}
