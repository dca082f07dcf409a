package tus_test

import (
	"crypto/sha256"
	"encoding/base64"
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
	"github.com/kino-video/kino/transport/tus/tustest"
)

// The handler's tests run it as kino serves it, mounted by the API
// (httpapitest: an embedded JetStream server, a bbolt read model, a
// media directory), with the tus directory in a place the test reads.

// api is a running API whose uploads are kept in tusDir, with no public
// base URL configured: Locations are paths; its Client speaks tus to it.
type api struct {
	*tustest.Client
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
	return &api{Client: &tustest.Client{T: t, URL: k.URL}, t: t, k: k, tusDir: dir}
}

// account creates an account with one key and a collection "main", and
// returns the key.
func (a *api) account(slug string, plan domain.Plan) string {
	a.t.Helper()
	key := a.k.Account(slug, plan)
	if r := a.Do("POST", "/v1/collections", key, `{"slug":"main","name":"Main"}`); r.Status != 201 {
		a.t.Fatalf("collection main: %d %s", r.Status, r.Body)
	}
	return key
}

// tusFiles lists the tus directory.
func (a *api) tusFiles() []string {
	a.t.Helper()
	return tustest.Files(a.t, a.tusDir)
}

var (
	tusMeta    = tustest.Meta
	clip       = tustest.Clip
	wantStatus = tustest.WantStatus
	wantError  = tustest.WantError
)

// Under a configured public base URL, an upload's Location is absolute,
// under that base, and the upload answers there.
func TestTusLocationUnderBaseURL(t *testing.T) {
	k := httpapitest.Start(t, httpapitest.Options{Plans: plans()})
	a := &api{Client: &tustest.Client{T: t, URL: k.URL}, t: t, k: k}
	key := a.account("acme", domain.PlanFree)
	r := a.Tus("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "clip.mp4", "collection", "main")}, nil)
	loc := r.Header.Get("Location")
	if r.Status != 201 || !strings.HasPrefix(loc, k.BaseURL+"/uploads/tus/") {
		t.Fatalf("create: %d, Location %q under %q", r.Status, loc, k.BaseURL)
	}
	if off, r := a.Offset(loc, key); r.Status != 200 || off != 0 {
		t.Fatalf("HEAD %s: %d, offset %d", loc, r.Status, off)
	}
}

func TestTusOptions(t *testing.T) {
	a := start(t)
	r := a.Tus("OPTIONS", "/v1/uploads/tus", "", map[string]string{"Tus-Resumable": ""}, nil)
	if r.Status != 204 {
		t.Fatalf("OPTIONS: %d %s", r.Status, r.Body)
	}
	for h, want := range map[string]string{
		"Tus-Resumable": "1.0.0", "Tus-Version": "1.0.0",
		"Tus-Extension":          "creation,creation-with-upload,termination,expiration,checksum",
		"Tus-Checksum-Algorithm": "sha1,md5,sha256,sha512",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if n, err := strconv.ParseInt(r.Header.Get("Tus-Max-Size"), 10, 64); err != nil || n != 1<<20 {
		t.Errorf("Tus-Max-Size %q", r.Header.Get("Tus-Max-Size"))
	}
}

func TestTusCreationWithUpload(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(3000)
	r := a.Tus("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "whole.mp4", "collection", "main")}, file)
	if r.Status != 201 || r.Header.Get("Upload-Offset") != "3000" {
		t.Fatalf("creation with upload: %d %v %s", r.Status, r.Header, r.Body)
	}
	a.WantVideo(key, strings.TrimPrefix(r.Header.Get("Location"), "/v1/uploads/tus/"), "whole.mp4")

	// Part of the file in the creation request, the rest by PATCH.
	r = a.Tus("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "3000", "Upload-Metadata": tusMeta("filename", "half.mp4", "collection", "main")}, file[:1500])
	if r.Status != 201 || r.Header.Get("Upload-Offset") != "1500" {
		t.Fatalf("creation with part: %d %v %s", r.Status, r.Header, r.Body)
	}
	loc := r.Header.Get("Location")
	if r := a.Patch(loc, key, 1500, file[1500:]); r.Status != 204 {
		t.Fatalf("rest: %d %s", r.Status, r.Body)
	}
	a.WantVideo(key, strings.TrimPrefix(loc, "/v1/uploads/tus/"), "half.mp4")
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
		{"signed Upload-Length", map[string]string{"Upload-Length": "+10", "Upload-Metadata": meta}, 400, "Bad request"},
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
			r := a.Tus("POST", "/v1/uploads/tus", key, tc.hdr, nil)
			wantError(t, r, tc.status, tc.label)
			if tc.status == 412 && r.Header.Get("Tus-Version") != "1.0.0" {
				t.Fatalf("412 without Tus-Version: %v", r.Header)
			}
		})
	}
	// The same collection a multipart upload is refused for: the same answer.
	wantError(t, a.Multipart(key, "nope", "a.mp4", clip(22)), 404, "Not found")
	wantError(t, a.Tus("POST", "/v1/uploads/tus", "", map[string]string{"Upload-Length": "10", "Upload-Metadata": meta}, nil), 401, respond.LabelMissingKey)
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("refused creations left %v", files)
	}
}

func TestTusPatchChecks(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	file := clip(4000)
	loc := a.Create(key, len(file))
	if r := a.Patch(loc, key, 0, file[:1000]); r.Status != 204 {
		t.Fatalf("first chunk: %d %s", r.Status, r.Body)
	}
	sha := func(b []byte) string {
		s := sha256.Sum256(b)
		return "sha256 " + base64.StdEncoding.EncodeToString(s[:])
	}
	tests := []struct {
		name   string
		r      func() tustest.Response
		status int
		label  string
	}{
		{"offset behind", func() tustest.Response { return a.Patch(loc, key, 0, file[:1000]) }, 409, "Conflict"},
		{"offset ahead", func() tustest.Response { return a.Patch(loc, key, 2000, file[2000:3000]) }, 409, "Conflict"},
		{"no offset", func() tustest.Response {
			return a.Tus("PATCH", loc, key, nil, file[1000:2000])
		}, 400, "Bad request"},
		{"signed offset", func() tustest.Response {
			return a.Tus("PATCH", loc, key, map[string]string{"Upload-Offset": "+1000", "Content-Type": "application/offset+octet-stream"}, file[1000:2000])
		}, 400, "Bad request"},
		{"wrong content type", func() tustest.Response {
			return a.Patch(loc, key, 1000, file[1000:2000], "Content-Type", "application/octet-stream")
		}, 415, "Unsupported media type"},
		{"checksum mismatch", func() tustest.Response {
			return a.Patch(loc, key, 1000, file[1000:2000], "Upload-Checksum", sha(file[:1000]))
		}, 460, "Checksum mismatch"},
		{"unsupported checksum", func() tustest.Response {
			return a.Patch(loc, key, 1000, file[1000:2000], "Upload-Checksum", "crc32 AAAAAA==")
		}, 400, "Bad request"},
		{"malformed checksum", func() tustest.Response {
			return a.Patch(loc, key, 1000, file[1000:2000], "Upload-Checksum", "sha256 abc")
		}, 400, "Bad request"},
		{"past Upload-Length", func() tustest.Response {
			return a.Patch(loc, key, 1000, append(append([]byte{}, file[1000:]...), 1, 2, 3))
		}, 413, "Request too large"},
		{"no Tus-Resumable", func() tustest.Response {
			return a.Patch(loc, key, 1000, file[1000:2000], "Tus-Resumable", "")
		}, 412, "Precondition failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.r(), tc.status, tc.label)
			if off, _ := a.Offset(loc, key); off != 1000 {
				t.Fatalf("offset after a refused chunk: %d, want 1000", off)
			}
			if fi, err := os.Stat(filepath.Join(a.tusDir, strings.TrimPrefix(loc, "/v1/uploads/tus/")+".bin")); err != nil || fi.Size() != 1000 {
				t.Fatalf("partial file after a refused chunk: %v %v", fi, err)
			}
		})
	}
	if r := a.Patch(loc, key, 1000, file[1000:], "Upload-Checksum", sha(file[1000:])); r.Status != 204 {
		t.Fatalf("chunk with a right checksum: %d %s", r.Status, r.Body)
	}
	a.WantVideo(key, strings.TrimPrefix(loc, "/v1/uploads/tus/"), "clip.mp4")
}

// Another account's upload does not exist for it: 404 on every method,
// and the upload is untouched.
func TestTusOtherAccountGets404(t *testing.T) {
	a := start(t)
	keyA := a.account("alpha", domain.PlanFree)
	keyB := a.account("beta", domain.PlanFree)
	file := clip(2000)
	loc := a.Create(keyA, len(file))
	wantStatus(t, a.Tus("HEAD", loc, keyB, nil, nil), 404)
	wantError(t, a.Patch(loc, keyB, 0, file), 404, "Not found")
	wantError(t, a.Tus("DELETE", loc, keyB, nil, nil), 404, "Not found")
	wantStatus(t, a.Tus("HEAD", "/v1/uploads/tus/01JZZZZZZZZZZZZZZZZZZZZZZZ", keyA, nil, nil), 404)
	if r := a.Patch(loc, keyA, 0, file); r.Status != 204 {
		t.Fatalf("owner's PATCH: %d %s", r.Status, r.Body)
	}
}

// A not-a-video is refused as soon as its first bytes are in, and the
// upload is gone.
func TestTusNotAVideoAtFirstChunk(t *testing.T) {
	a := start(t)
	key := a.account("acme", domain.PlanFree)
	text := []byte(strings.Repeat("#EXTM3U not a video\n", 200))
	loc := a.Create(key, len(text))
	// A first chunk shorter than what the sniffer reads is kept until
	// there is enough to look at.
	if r := a.Patch(loc, key, 0, text[:100]); r.Status != 204 {
		t.Fatalf("short first chunk: %d %s", r.Status, r.Body)
	}
	wantError(t, a.Patch(loc, key, 100, text[100:2000]), 415, "Unsupported media type")
	if r := a.Tus("HEAD", loc, key, nil, nil); r.Status != 404 {
		t.Fatalf("refused upload still answers HEAD: %d", r.Status)
	}
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("refused upload left %v", files)
	}
	// In the creation request itself.
	r := a.Tus("POST", "/v1/uploads/tus", key, map[string]string{
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
	loc := a.Create(key, len(file))
	if r := a.Patch(loc, key, 0, file[:1500]); r.Status != 204 {
		t.Fatalf("PATCH: %d", r.Status)
	}
	if r := a.Tus("DELETE", loc, key, nil, nil); r.Status != 204 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if files := a.tusFiles(); len(files) != 0 {
		t.Fatalf("terminated upload left %v", files)
	}
	wantError(t, a.Patch(loc, key, 1500, file[1500:]), 404, "Not found")
	if r := a.Do("GET", "/v1/videos/"+strings.TrimPrefix(loc, "/v1/uploads/tus/"), key, ""); r.Status != 404 {
		t.Fatalf("terminated upload became a video: %d", r.Status)
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
		locs = append(locs, a.Create(key, 1000))
	}
	r := a.Tus("POST", "/v1/uploads/tus", key, map[string]string{
		"Upload-Length": "1000", "Upload-Metadata": tusMeta("filename", "a.mp4", "collection", "main")}, nil)
	wantError(t, r, 429, respond.LabelRateLimited)
	a.Create(other, 1000) // another account is not held back
	if r := a.Tus("DELETE", locs[0], key, nil, nil); r.Status != 204 {
		t.Fatalf("DELETE: %d", r.Status)
	}
	a.Create(key, 1000)
}
