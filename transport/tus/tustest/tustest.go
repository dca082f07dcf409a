// Package tustest is a tus 1.0 client for tests of kino's tus endpoint
// (/v1/uploads/tus), and the checks on what it answers: one copy for the
// tests of package tus and for the API's own tests, which cannot import
// httpapitest (it imports the API).
package tustest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kino-video/kino/transport/tus"
)

// Path is where uploads are created; an upload's Location is Path + "/" + its id.
const Path = "/v1/uploads/tus"

// Response is one answer of the API, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Close  bool // the server closes the connection after it
}

// Client sends requests with a bearer key to the API whose root is URL
// (http://host:port), failing T when one cannot be sent.
type Client struct {
	T   testing.TB
	URL string
}

// Send sends req with key as its bearer token (none when empty).
func (c *Client) Send(req *http.Request, key string) Response {
	c.T.Helper()
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Close: resp.Close}
}

// Do sends method to path with body (none when empty) as it is.
func (c *Client) Do(method, path, key, body string) Response {
	c.T.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.URL+path, r)
	if err != nil {
		c.T.Fatal(err)
	}
	return c.Send(req, key)
}

// Tus sends a tus request to path (under URL when it starts with "/",
// else a whole URL): Tus-Resumable is set, and the tus Content-Type when
// body is not nil, unless hdr says otherwise ("" removes a header).
func (c *Client) Tus(method, path, key string, hdr map[string]string, body []byte) Response {
	c.T.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	url := path
	if strings.HasPrefix(path, "/") {
		url = c.URL + path
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		c.T.Fatal(err)
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
	return c.Send(req, key)
}

// Create creates an upload of n bytes of clip.mp4 into collection main,
// checks the answer (201, Location a path under Path, offset 0,
// Tus-Resumable and Upload-Expires) and returns the Location.
func (c *Client) Create(key string, n int) string {
	c.T.Helper()
	r := c.Tus("POST", Path, key, map[string]string{
		"Upload-Length": strconv.Itoa(n), "Upload-Metadata": Meta("filename", "clip.mp4", "collection", "main")}, nil)
	if r.Status != 201 {
		c.T.Fatalf("create: %d %s", r.Status, r.Body)
	}
	loc := r.Header.Get("Location")
	if !strings.HasPrefix(loc, Path+"/") || r.Header.Get("Upload-Offset") != "" && r.Header.Get("Upload-Offset") != "0" {
		c.T.Fatalf("create: Location %q, Upload-Offset %q", loc, r.Header.Get("Upload-Offset"))
	}
	if r.Header.Get("Tus-Resumable") != "1.0.0" || r.Header.Get("Upload-Expires") == "" {
		c.T.Fatalf("create: headers %v", r.Header)
	}
	return loc
}

// Patch sends chunk at offset to the upload at path; hdr are more headers,
// name then value.
func (c *Client) Patch(path, key string, offset int, chunk []byte, hdr ...string) Response {
	c.T.Helper()
	h := map[string]string{"Upload-Offset": strconv.Itoa(offset)}
	for i := 0; i+1 < len(hdr); i += 2 {
		h[hdr[i]] = hdr[i+1]
	}
	return c.Tus("PATCH", path, key, h, chunk)
}

// Offset asks (HEAD) for the upload's offset: 0 when the answer has none.
func (c *Client) Offset(path, key string) (int, Response) {
	c.T.Helper()
	r := c.Tus("HEAD", path, key, nil, nil)
	n, _ := strconv.Atoi(r.Header.Get("Upload-Offset"))
	return n, r
}

// WantVideo checks that video id is readable by key, named filename, in
// collection main.
func (c *Client) WantVideo(key, id, filename string) {
	c.T.Helper()
	r := c.Do("GET", "/v1/videos/"+id, key, "")
	if r.Status != 200 {
		c.T.Fatalf("GET video %s: %d %s", id, r.Status, r.Body)
	}
	var v struct {
		ID, Filename, Status string
		Collection           struct{ Slug string }
	}
	if err := json.Unmarshal(r.Body, &v); err != nil {
		c.T.Fatal(err)
	}
	if v.ID != id || v.Filename != filename || v.Collection.Slug != "main" {
		c.T.Fatalf("video: %s", r.Body)
	}
}

// Multipart is a multipart upload (POST /v1/videos) of file into
// collection slug, what a tus upload is compared with.
func (c *Client) Multipart(key, slug, filename string, file []byte) Response {
	c.T.Helper()
	body := "--B\r\nContent-Disposition: form-data; name=\"collection\"\r\n\r\n" + slug + "\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + filename + "\"\r\n\r\n" + string(file) + "\r\n--B--\r\n"
	req, err := http.NewRequest("POST", c.URL+"/v1/videos", strings.NewReader(body))
	if err != nil {
		c.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=B")
	return c.Send(req, key)
}

// Meta encodes name, value pairs as an Upload-Metadata header.
func Meta(pairs ...string) string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, pairs[i]+" "+base64.StdEncoding.EncodeToString([]byte(pairs[i+1])))
	}
	return strings.Join(out, ",")
}

// Clip is a file of n bytes that sniffs as MP4.
func Clip(n int) []byte {
	return append([]byte("\x00\x00\x00\x18ftypmp42"), make([]byte, n-12)...)
}

// Files lists the names in dir (a tus directory, say).
func Files(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// WantStatus fails the test unless r has status.
func WantStatus(t testing.TB, r Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
}

// WantError checks an error answer as the API writes it: status, a JSON
// Content-Type and a body of exactly {error, message} with error label and
// a message; it returns the body.
func WantError(t testing.TB, r Response, status int, label string) map[string]any {
	t.Helper()
	WantStatus(t, r, status)
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, r.Body)
	}
	if m["error"] != label {
		t.Fatalf("error %q, want %q: %s", m["error"], label, r.Body)
	}
	if msg, _ := m["message"].(string); msg == "" || len(m) != 2 {
		t.Fatalf("error body must be exactly {error, message}: %s", r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type %q", ct)
	}
	return m
}
