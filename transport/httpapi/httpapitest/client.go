package httpapitest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// Response is one answer of the API, read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object, failing the test when it is not
// one.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// Client sends a test's requests to a kino API (this package's or a kino
// serve's) and checks every exchange against docs/openapi.yaml.
type Client struct {
	t        testing.TB
	url      string
	contract *Contract
}

// NewClient is a client of the API whose root is url (http://host:port).
func NewClient(t testing.TB, url string) *Client {
	t.Helper()
	return &Client{t: t, url: url, contract: NewContract(t, url)}
}

// Client is a client of k's API.
func (k *Kino) Client() *Client {
	k.t.Helper()
	return NewClient(k.t, k.URL)
}

// Request sends one request with key as its bearer token (none when
// empty). Bodies held in memory (bytes.Buffer, bytes.Reader,
// strings.Reader) are kept to check the request against the contract;
// streamed ones (large uploads) are not.
func (c *Client) Request(method, path, key, contentType string, body io.Reader) Response {
	c.t.Helper()
	var sent []byte
	checkContract := true
	switch b := body.(type) {
	case nil:
	case *bytes.Buffer, *bytes.Reader, *strings.Reader:
		raw, err := io.ReadAll(b)
		if err != nil {
			c.t.Fatal(err)
		}
		sent, body = raw, bytes.NewReader(raw)
	default:
		checkContract = false
	}
	req, err := http.NewRequest(method, c.url+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if !checkContract {
		return c.send(req, nil, false)
	}
	return c.Send(req, sent)
}

// Send sends a request a test built itself (with a session cookie, say)
// whose body, if any, is body, and checks the exchange against the
// contract.
func (c *Client) Send(req *http.Request, body []byte) Response {
	c.t.Helper()
	return c.send(req, body, true)
}

func (c *Client) send(req *http.Request, body []byte, check bool) Response {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if check {
		c.contract.Check(c.t, req, body, resp.StatusCode, resp.Header, b)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Do sends body (marshalled unless it is a string) as JSON.
func (c *Client) Do(method, path, key string, body any) Response {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	ct := ""
	if r != nil {
		ct = "application/json"
	}
	return c.Request(method, path, key, ct, r)
}

// Upload posts a multipart upload (POST /v1/videos). A nil file omits the
// file field; an empty collection omits the collection field.
func (c *Client) Upload(key, collection, filename string, file []byte) Response {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if collection != "" {
		_ = mw.WriteField("collection", collection)
	}
	if file != nil {
		fw, err := mw.CreateFormFile("file", filename)
		if err != nil {
			c.t.Fatal(err)
		}
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	return c.Request(http.MethodPost, "/v1/videos", key, mw.FormDataContentType(), &buf)
}

// WantStatus fails the test unless r has status.
func WantStatus(t testing.TB, r Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
}

// WantError checks an error response: its status, and a body of exactly
// {error, message} with error label.
func WantError(t testing.TB, r Response, status int, label string) {
	t.Helper()
	WantStatus(t, r, status)
	m := r.JSON(t)
	if m["error"] != label {
		t.Fatalf("error %q, want %q: %s", m["error"], label, r.Body)
	}
	msg, _ := m["message"].(string)
	if msg == "" || len(m) != 2 {
		t.Fatalf("error body must be exactly {error, message}: %s", r.Body)
	}
}

// VideoFields are the fields of a Video: spec §2's and kino's additions.
var VideoFields = []string{"id", "filename", "status", "duration", "originalSize", "processedSize", "playlistUrl",
	"thumbnailUrl", "previewUrl", "resolutions", "errorMessage", "collection", "createdAt", "updatedAt",
	"progress", // progress and the rest are kino's additions to spec §2
	"playbackPolicy", "storyboardUrl", "downloadUrl", "speed", "eta", "queuePosition",
	"title", "description", "tags", "metadata", "captions", "thumbnailTime", "animatedPreviewUrl"}

// WantTimestamp fails the test unless v, the field name of a body, is an
// ISO 8601 UTC time with milliseconds.
func WantTimestamp(t testing.TB, name string, v any) {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(domain.TimeFormat, s)
	if err != nil || !strings.HasSuffix(s, "Z") || len(s) != len("2006-01-02T15:04:05.000Z") || ts.IsZero() {
		t.Fatalf("%s = %v: want ISO 8601 UTC with milliseconds", name, v)
	}
}

// MP4Box is an ISO-BMFF ftyp box: a file that starts with it passes the
// upload's container check.
var MP4Box = []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")

// NotAVideo is n bytes that start like an MP4 (so the upload's container
// check takes them) and hold nothing ffmpeg can read: an upload that is
// accepted and then FAILED.
func NotAVideo(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 31)
	}
	copy(b, MP4Box)
	return b
}
