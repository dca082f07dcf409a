package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Upload sends size bytes from r as filename into collection, as one
// multipart POST /v1/videos, streaming (with a Content-Length, so an
// oversize file is refused at once), and reports the bytes sent to
// progress (may be nil).
//
// An upload refused with 429 or 503 was not stored: when r is an
// io.Seeker (a file, a bytes.Reader) it is rewound and sent again after
// the Retry-After (progress starts again from 0); otherwise the *Error is
// returned. For large files, or unreliable networks, UploadResumable sends
// the file in chunks and resumes after a failure.
//
// opts override the collection's defaults for this video
// (WithPlaybackPolicy, WithDownload).
func (c *Client) Upload(ctx context.Context, r io.Reader, size int64, filename, collection string, progress func(sent, total int64), opts ...UploadOption) (Uploaded, error) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	if err := mw.WriteField("collection", collection); err != nil {
		return Uploaded{}, err
	}
	for _, f := range uploadSettingsOf(opts).fields() {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return Uploaded{}, err
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	h.Set("Content-Type", "application/octet-stream")
	if _, err := mw.CreatePart(h); err != nil {
		return Uploaded{}, err
	}
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	seeker, _ := r.(io.Seeker)
	attempts := 0
	cl := c.api(http.MethodPost, "/videos", nil)
	cl.contentType = mw.FormDataContentType()
	cl.refusedFirst = true
	// kino answers a refusal (429, 503, 413 by Content-Length, 401)
	// before it reads the body: with 100-continue the file is not sent
	// for nothing (when the http.Client's transport waits for it, as
	// http.DefaultTransport does).
	cl.header = http.Header{"Expect": {"100-continue"}}
	cl.body = func() (io.Reader, int64, error) {
		if attempts > 0 {
			if seeker == nil {
				return nil, 0, errors.New("kino: the upload was refused and its reader cannot be rewound to send it again (pass an io.Seeker)")
			}
			if _, err := seeker.Seek(0, io.SeekStart); err != nil {
				return nil, 0, err
			}
		}
		attempts++
		file := &counter{r: io.LimitReader(r, size), total: size, progress: progress}
		return io.MultiReader(bytes.NewReader(head.Bytes()), file, strings.NewReader(tail)),
			int64(head.Len()) + size + int64(len(tail)), nil
	}
	var out Uploaded
	return out, c.do(ctx, cl, &out)
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

// Video reads one video. Another account's video, or a deleted one, is
// ErrNotFound.
func (c *Client) Video(ctx context.Context, id string) (Video, error) {
	var v Video
	return v, c.get(ctx, "/videos/"+url.PathEscape(id), nil, &v)
}

// ListOptions filters and pages GET /v1/videos; zero values are left out
// (the server's defaults: every collection and status, 50 a page).
type ListOptions struct {
	Collection string // a collection's slug
	Status     Status
	Limit      int // 1..100
	Offset     int
	// Query finds videos by the words of their title, description, tags
	// and filename (case- and accent-insensitive; the last word matches
	// as a prefix unless a space follows it).
	Query string
	Tag   string            // videos with this tag (case-insensitive)
	Meta  map[string]string // videos with these metadata values
	// CreatedAfter and CreatedBefore bound createdAt (zero: no bound).
	CreatedAfter, CreatedBefore time.Time
	Oldest                      bool   // oldest first (default newest first)
	Cursor                      string // a page's NextCursor: the page after it
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Collection != "" {
		q.Set("collection", o.Collection)
	}
	if o.Status != "" {
		q.Set("status", string(o.Status))
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Offset != 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	if o.Query != "" {
		q.Set("q", o.Query)
	}
	if o.Tag != "" {
		q.Set("tag", o.Tag)
	}
	for k, v := range o.Meta {
		q.Set("metadata["+k+"]", v)
	}
	if !o.CreatedAfter.IsZero() {
		q.Set("createdAfter", formatTime(o.CreatedAfter))
	}
	if !o.CreatedBefore.IsZero() {
		q.Set("createdBefore", formatTime(o.CreatedBefore))
	}
	if o.Oldest {
		q.Set("sort", "oldest")
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// VideoPage is one page of a listing; NextCursor ("" on the last page)
// gives the next (ListOptions.Cursor). A search's page may be short, even
// empty, and still have a next: follow NextCursor until it is "".
type VideoPage struct {
	Videos     []Video
	NextCursor string
}

// Videos lists one page of videos, newest first (ListOptions.Oldest:
// oldest first).
func (c *Client) Videos(ctx context.Context, o ListOptions) ([]Video, error) {
	p, err := c.VideosPage(ctx, o)
	return p.Videos, err
}

// VideosPage lists one page of videos, with the cursor of the next.
func (c *Client) VideosPage(ctx context.Context, o ListOptions) (VideoPage, error) {
	var out struct {
		Videos     []Video `json:"videos"`
		NextCursor *string `json:"nextCursor"`
	}
	if err := c.get(ctx, "/videos", o.query(), &out); err != nil {
		return VideoPage{}, err
	}
	p := VideoPage{Videos: out.Videos}
	if out.NextCursor != nil {
		p.NextCursor = *out.NextCursor
	}
	return p, nil
}

// AllVideos iterates over every video that matches o's filters, in o's
// order, a page (o.Limit, default 100) at a time, from o.Offset (or
// o.Cursor): the pages follow each other by cursor, so a video uploaded
// or deleted during the iteration neither repeats nor hides another. An
// error ends the iteration (it is yielded with a zero Video).
func (c *Client) AllVideos(ctx context.Context, o ListOptions) iter.Seq2[Video, error] {
	if o.Limit == 0 {
		o.Limit = 100
	}
	return func(yield func(Video, error) bool) {
		for {
			page, err := c.VideosPage(ctx, o)
			if err != nil {
				yield(Video{}, err)
				return
			}
			for _, v := range page.Videos {
				if !yield(v, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			o.Cursor, o.Offset = page.NextCursor, 0
		}
	}
}

// DeleteVideo deletes a video and its files.
func (c *Client) DeleteVideo(ctx context.Context, id string) error {
	return c.do(ctx, c.api(http.MethodDelete, "/videos/"+url.PathEscape(id), nil), nil)
}

// VideoEvents is a video's history, oldest first: every event kino
// recorded for it, also after it was deleted.
func (c *Client) VideoEvents(ctx context.Context, id string) ([]Event, error) {
	var out struct {
		Events []struct {
			Seq        uint64          `json:"seq"`
			ID         string          `json:"id"`
			Type       string          `json:"type"`
			Version    int             `json:"version"`
			OccurredAt string          `json:"occurredAt"`
			Data       json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if err := c.get(ctx, "/videos/"+url.PathEscape(id)+"/events", nil, &out); err != nil {
		return nil, err
	}
	events := make([]Event, len(out.Events))
	for i, e := range out.Events {
		events[i] = Event{Seq: e.Seq, ID: e.ID, Type: e.Type, Version: e.Version, OccurredAt: parseTime(e.OccurredAt), Data: e.Data}
	}
	return events, nil
}

// PollInterval is how often Wait asks by default, as spec §3's client rule
// says.
const PollInterval = 2 * time.Second

// WaitOptions tune Wait.
type WaitOptions struct {
	// Interval between two reads (default PollInterval, 2 s).
	Interval time.Duration
	// OnPoll, when set, is called with each read of the video.
	OnPoll func(Video)
}

// Wait polls a video until it is COMPLETED or FAILED, or ctx ends. It
// returns the last read of the video, and for FAILED a *FailedError
// (errors.Is(err, ErrFailed)) whose message is the video's errorMessage.
// A read refused with 429 or 503 even after the client's retries does not
// end the wait: it goes on after the server's Retry-After. Bound the wait
// with ctx: a video stays PENDING while no worker runs.
func (c *Client) Wait(ctx context.Context, id string, o WaitOptions) (Video, error) {
	if o.Interval <= 0 {
		o.Interval = PollInterval
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	var last Video
	for {
		v, err := c.Video(ctx, id)
		var apiErr *Error
		if errors.As(err, &apiErr) && (apiErr.Status == http.StatusTooManyRequests || apiErr.Status == http.StatusServiceUnavailable) {
			// Still refused after the client's retries: the account's
			// budget is busy elsewhere, or the server is. Waiting is
			// what Wait does; go on after the server's Retry-After.
			if err := c.wait(ctx, max(apiErr.RetryAfter, o.Interval)); err != nil {
				return last, err
			}
			continue
		}
		if err != nil {
			return v, err
		}
		last = v
		if o.OnPoll != nil {
			o.OnPoll(v)
		}
		switch v.Status {
		case StatusCompleted:
			return v, nil
		case StatusFailed:
			return v, &FailedError{Video: v}
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-tick.C:
		}
	}
}
