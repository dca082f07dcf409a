// Package apiclient is a Go client of kino's v1 API, used by `kino
// upload`, `kino videos` and the end-to-end tests.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/transport/wire"
)

// Client calls one kino instance with one API key.
type Client struct {
	BaseURL string // ends in /v1, e.g. http://localhost:8080/v1
	Key     string
	HTTP    *http.Client // nil: a client without a timeout (uploads are long)
}

// Error is an API error: the status and the {error, message} body.
type Error struct {
	Status  int
	Label   string // wire.Error's "error"
	Message string
}

func (e *Error) Error() string {
	if e.Label == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", e.Label, e.Status, e.Message)
}

// The resources are the API's own types (transport/wire), so the client
// reads exactly what the server writes.
type (
	Video      = wire.Video         // spec §2, plus kino's progress
	Collection = wire.CollectionRef // a video's collection
	Uploaded   = wire.Uploaded      // the 202 answer to an upload
)

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// do sends a request and decodes a 2xx JSON answer into out.
func (c *Client) do(req *http.Request, out any) error {
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var b wire.Error
		_ = json.Unmarshal(body, &b)
		return &Error{Status: resp.StatusCode, Label: b.Error, Message: b.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+path, nil)
	if err != nil {
		return err
	}
	return c.do(req, out)
}

// Upload sends size bytes from r as filename into collection, streaming
// (with a Content-Length, so an oversize file is refused at once), and
// reports bytes sent to progress (may be nil).
func (c *Client) Upload(ctx context.Context, r io.Reader, size int64, filename, collection string, progress func(sent, total int64)) (Uploaded, error) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	if err := mw.WriteField("collection", collection); err != nil {
		return Uploaded{}, err
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	h.Set("Content-Type", "application/octet-stream")
	if _, err := mw.CreatePart(h); err != nil {
		return Uploaded{}, err
	}
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	body := io.MultiReader(&head, &counter{r: io.LimitReader(r, size), total: size, progress: progress}, strings.NewReader(tail))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/videos", body)
	if err != nil {
		return Uploaded{}, err
	}
	req.ContentLength = int64(head.Len()) + size + int64(len(tail))
	req.Header.Set("Content-Type", mw.FormDataContentType())
	var out Uploaded
	return out, c.do(req, &out)
}

// counter reports progress as the file is read.
type counter struct {
	r        io.Reader
	sent     int64
	total    int64
	progress func(sent, total int64)
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sent += int64(n)
	if c.progress != nil && n > 0 {
		c.progress(c.sent, c.total)
	}
	return n, err
}

// Video reads one video.
func (c *Client) Video(ctx context.Context, id string) (Video, error) {
	var v Video
	return v, c.get(ctx, "/videos/"+url.PathEscape(id), &v)
}

// ListOptions filters and pages GET /videos; zero values are left out.
type ListOptions struct {
	Collection, Status string
	Limit, Offset      int
}

// Videos lists videos, newest first.
func (c *Client) Videos(ctx context.Context, o ListOptions) ([]Video, error) {
	q := url.Values{}
	if o.Collection != "" {
		q.Set("collection", o.Collection)
	}
	if o.Status != "" {
		q.Set("status", o.Status)
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Offset != 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	path := "/videos"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out wire.Videos
	return out.Videos, c.get(ctx, path, &out)
}

// DeleteVideo deletes a video and its files.
func (c *Client) DeleteVideo(ctx context.Context, id string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, strings.TrimRight(c.BaseURL, "/")+"/videos/"+url.PathEscape(id), nil)
	if err != nil {
		return err
	}
	return c.do(req, nil)
}

// PollInterval is how often Wait asks, as spec §3's client rule says.
const PollInterval = 2 * time.Second

// Wait polls a video every interval (PollInterval when 0) until it is
// COMPLETED or FAILED, calling onPoll with each answer (may be nil).
func (c *Client) Wait(ctx context.Context, id string, interval time.Duration, onPoll func(Video)) (Video, error) {
	if interval <= 0 {
		interval = PollInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		v, err := c.Video(ctx, id)
		if err != nil {
			return v, err
		}
		if onPoll != nil {
			onPoll(v)
		}
		if v.Done() {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-tick.C:
		}
	}
}
