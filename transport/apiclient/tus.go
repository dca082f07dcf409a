package apiclient

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Resumable uploads speak tus 1.0 (https://tus.io/protocols/resumable-upload):
// an upload is created with its length and metadata, then its bytes are
// PATCHed in chunks; after a failure the client asks the server (HEAD)
// how much it has and goes on from there. The upload's URL ends in the id
// of the video it becomes, and is all one needs to resume it later, from
// another process: persist Resumable.URL.

// TusVersion is the tus protocol version spoken.
const TusVersion = "1.0.0"

// DefaultChunkSize is the size of one PATCH.
const DefaultChunkSize = 8 << 20

// TusOptions tune a resumable upload.
type TusOptions struct {
	// ChunkSize is the bytes sent per PATCH (default 8 MiB). Each chunk
	// is held in memory, and is what a failure costs to send again.
	ChunkSize int64
	// Checksum sends each chunk's SHA-256 (Upload-Checksum); the server
	// refuses a chunk that arrives damaged, and it is sent again.
	Checksum bool
	// Progress, when set, is told the bytes the server has after each
	// chunk (starting with what it had already).
	Progress func(sent, total int64)
	// MaxFailures is how many failed attempts in a row (connection
	// errors, 5xx, a damaged chunk, a 409) end the upload (default 8:
	// about a minute and a half of waits). After each one the client
	// waits (1 s, 2 s, 4 s ... 32 s, or the server's Retry-After) and asks
	// the server for its offset. (kino answers 409 to a new PATCH while
	// a connection that died unnoticed still holds the upload, up to its
	// idle timeout, 30 s.)
	MaxFailures int
}

// Resumable is a tus upload. Persist URL to resume it after a crash.
type Resumable struct {
	// URL is the upload's address; its last segment is the video id.
	URL string
	// Size is the upload's length (0 until known when resumed from a URL:
	// Offset and Send learn it).
	Size int64

	c     *Client
	noKey bool
}

// DirectUpload is a one-time upload URL for a client that must not hold
// the API key (a browser): POST /v1/uploads.
type DirectUpload struct {
	ID        string    // the id the video will have
	URL       string    // a tus creation URL needing no Authorization; works once
	ExpiresAt time.Time // unused after this, it is refused
}

// CreateDirectUpload makes a direct upload URL into collection, valid for
// expiresIn (whole seconds, 1 min to 24 h; 0: the server's default, 1 h):
// hand URL to whoever uploads (tus-js-client's endpoint, or
// CreateResumableAt). The URL is a credential until it is used or expires.
//
// opts override the collection's defaults for the video (WithPlaybackPolicy,
// WithDownload); the uploader cannot change them.
func (c *Client) CreateDirectUpload(ctx context.Context, collection string, expiresIn time.Duration, opts ...UploadOption) (DirectUpload, error) {
	set := uploadSettingsOf(opts)
	body := struct {
		Collection     string         `json:"collection"`
		ExpiresIn      int64          `json:"expiresIn,omitempty"`
		PlaybackPolicy PlaybackPolicy `json:"playbackPolicy,omitempty"`
		Download       *bool          `json:"download,omitempty"`
		Details
	}{collection, int64(expiresIn / time.Second), set.policy, set.download, set.details}
	cl := c.api(http.MethodPost, "/uploads", nil)
	cl.body, cl.contentType = jsonBody(body), "application/json"
	var out struct {
		ID        string `json:"id"`
		URL       string `json:"url"`
		ExpiresAt string `json:"expiresAt"`
	}
	if err := c.do(ctx, cl, &out); err != nil {
		return DirectUpload{}, err
	}
	return DirectUpload{ID: out.ID, URL: out.URL, ExpiresAt: parseTime(out.ExpiresAt)}, nil
}

// UploadResumable uploads size bytes of r as filename into collection
// with tus (CreateResumable, then Send): the upload survives dropped
// connections and restarts of kino. It returns the upload (its VideoID is
// the video's) also with an error, so that a caller can persist its URL
// and Resume it later.
func (c *Client) UploadResumable(ctx context.Context, r io.ReaderAt, size int64, filename, collection string, o TusOptions, opts ...UploadOption) (*Resumable, error) {
	u, err := c.CreateResumable(ctx, size, filename, collection, opts...)
	if err != nil {
		return nil, err
	}
	return u, u.Send(ctx, r, o)
}

// CreateResumable creates a tus upload of size bytes at POST
// /v1/uploads/tus. The plan's size limit, the file type (by filename) and
// the collection are checked here; the video exists once the last byte
// is sent. opts override the collection's defaults for the video.
func (c *Client) CreateResumable(ctx context.Context, size int64, filename, collection string, opts ...UploadOption) (*Resumable, error) {
	meta := map[string]string{"filename": filename, "collection": collection}
	for _, f := range uploadSettingsOf(opts).fields() {
		meta[f[0]] = f[1]
	}
	return c.create(ctx, c.base()+"/uploads/tus", size, meta, false)
}

// CreateResumableAt creates a tus upload at a direct upload URL
// (DirectUpload.URL), without the API key: the URL carries the
// collection and the permission.
func (c *Client) CreateResumableAt(ctx context.Context, creationURL string, size int64, filename string) (*Resumable, error) {
	return c.create(ctx, creationURL, size, map[string]string{"filename": filename}, true)
}

// Resume is an upload created before, from its URL: Send goes on from
// where the server is. A direct upload's URL is resumed without the key.
func (c *Client) Resume(uploadURL string) *Resumable {
	return &Resumable{URL: uploadURL, c: c, noKey: isDirect(uploadURL)}
}

func isDirect(u string) bool {
	p, err := url.Parse(u)
	return err == nil && strings.Contains(p.Path, "/uploads/tus/direct/")
}

func (c *Client) create(ctx context.Context, creationURL string, size int64, meta map[string]string, noKey bool) (*Resumable, error) {
	if size <= 0 {
		return nil, errors.New("kino: a resumable upload needs its size (Upload-Length), more than 0")
	}
	var pairs []string
	// The upload's own keys first, then its details in key order.
	first := []string{"filename", "collection", "playbackPolicy", "download"}
	keys := slices.DeleteFunc(slices.Sorted(maps.Keys(meta)), func(k string) bool { return slices.Contains(first, k) })
	for _, k := range append(first, keys...) {
		if v, ok := meta[k]; ok {
			pairs = append(pairs, k+" "+base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	cl := call{method: http.MethodPost, url: creationURL, noKey: noKey || isDirect(creationURL),
		// kino refuses a creation with 429/503 before it makes anything;
		// a creation lost after it was made leaves an empty upload, which
		// expires.
		refusedFirst: true,
		header: http.Header{"Tus-Resumable": {TusVersion}, "Upload-Length": {strconv.FormatInt(size, 10)},
			"Upload-Metadata": {strings.Join(pairs, ",")}}}
	cl.body = func() (io.Reader, int64, error) { return http.NoBody, 0, nil }
	resp, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	loc := resp.header.Get("Location")
	if loc == "" {
		return nil, fmt.Errorf("kino: POST %s answered %d without a Location", redactPath(creationURL), resp.status)
	}
	base, err := url.Parse(creationURL)
	if err != nil {
		return nil, err
	}
	abs, err := base.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("kino: malformed Location: %w", err)
	}
	return &Resumable{URL: abs.String(), Size: size, c: c, noKey: cl.noKey}, nil
}

// VideoID is the id of the video the upload becomes: its URL's last
// segment.
func (u *Resumable) VideoID() string {
	p, err := url.Parse(u.URL)
	if err != nil {
		return ""
	}
	path := strings.TrimRight(p.Path, "/")
	return path[strings.LastIndex(path, "/")+1:]
}

func (u *Resumable) call(method string) call {
	return call{method: method, url: u.URL, noKey: u.noKey, header: http.Header{"Tus-Resumable": {TusVersion}}}
}

// Offset asks the server how many bytes of the upload it has (HEAD), and
// learns the upload's size. An upload removed (expired, cancelled) is
// ErrNotFound or ErrGone.
func (u *Resumable) Offset(ctx context.Context) (int64, error) {
	resp, err := u.c.send(ctx, u.call(http.MethodHead))
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(resp.header.Get("Upload-Offset"), 10, 64)
	if err != nil || off < 0 {
		return 0, fmt.Errorf("kino: HEAD %s: no valid Upload-Offset", redactPath(u.URL))
	}
	if n, err := strconv.ParseInt(resp.header.Get("Upload-Length"), 10, 64); err == nil && n > 0 {
		u.Size = n
	}
	return off, nil
}

// Cancel ends the upload and removes what was sent (tus termination).
func (u *Resumable) Cancel(ctx context.Context) error {
	_, err := u.c.send(ctx, u.call(http.MethodDelete))
	return err
}

// Send sends the upload's bytes, read from r at their offsets, from the
// server's offset to the end: it resumes an interrupted upload as well as
// it starts a new one. r must hold the same bytes as when the upload was
// created. A failure is retried (TusOptions.MaxFailures) from the
// server's offset; a refusal (4xx) ends it with an *Error.
func (u *Resumable) Send(ctx context.Context, r io.ReaderAt, o TusOptions) error {
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 8
	}
	failures := 0
	// fail counts a failed attempt and waits before the next one.
	fail := func(err error) error {
		failures++
		if failures >= o.MaxFailures || ctx.Err() != nil {
			return err
		}
		wait := time.Duration(1<<min(failures-1, 5)) * time.Second
		var apiErr *Error
		if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > u.c.Retry.maxWait() {
				return err
			}
			wait = apiErr.RetryAfter
		}
		if u.c.Retry.OnRetry != nil {
			u.c.Retry.OnRetry(RetryInfo{Method: http.MethodPatch, Path: redactPath(u.URL), Attempt: failures, Err: apiErr, Wait: wait})
		}
		return u.c.wait(ctx, wait)
	}
	var buf []byte
	known := false // the offset is the server's
	var offset int64
	for {
		if !known {
			off, err := u.Offset(ctx)
			if err != nil {
				if !transient(err) {
					return err
				}
				if err := fail(err); err != nil {
					return err
				}
				continue
			}
			if u.Size <= 0 {
				return fmt.Errorf("kino: HEAD %s: the upload's length is not known (no Upload-Length)", redactPath(u.URL))
			}
			offset, known = off, true
			if o.Progress != nil {
				o.Progress(offset, u.Size)
			}
		}
		if offset >= u.Size {
			return nil
		}
		n := min(o.ChunkSize, u.Size-offset)
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		chunk := buf[:n]
		if _, err := r.ReadAt(chunk, offset); err != nil && !(errors.Is(err, io.EOF) && int64(len(chunk)) == n) {
			return fmt.Errorf("kino: reading the file at %d: %w", offset, err)
		}
		cl := u.call(http.MethodPatch)
		cl.contentType = "application/offset+octet-stream"
		cl.header.Set("Upload-Offset", strconv.FormatInt(offset, 10))
		if o.Checksum {
			sum := sha256.Sum256(chunk)
			cl.header.Set("Upload-Checksum", "sha256 "+base64.StdEncoding.EncodeToString(sum[:]))
		}
		cl.body = func() (io.Reader, int64, error) { return bytesReader(chunk), n, nil }
		resp, err := u.c.once(ctx, cl)
		if err == nil && resp.status/100 != 2 {
			err = newError(resp)
		}
		if err != nil {
			if !transient(err) {
				return err
			}
			known = false
			if err := fail(err); err != nil {
				return err
			}
			continue
		}
		next, perr := strconv.ParseInt(resp.header.Get("Upload-Offset"), 10, 64)
		if perr != nil || next <= offset || next > u.Size {
			// No progress, or an offset to doubt: ask the server.
			known = false
			if err := fail(fmt.Errorf("kino: PATCH %s: the server's Upload-Offset %q does not follow %d", redactPath(u.URL), resp.header.Get("Upload-Offset"), offset)); err != nil {
				return err
			}
			continue
		}
		offset = next
		if o.Progress != nil {
			o.Progress(offset, u.Size)
		}
		failures = 0
	}
}

// transient reports whether a failed tus request is worth resuming: no
// answer, a 409 (the offset moved: ask again), a damaged chunk (460), or
// the server's 429, 5xx.
func transient(err error) bool {
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		var te *TransportError
		return errors.As(err, &te) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch s := apiErr.Status; {
	case s == http.StatusConflict, s == 460, s == http.StatusTooManyRequests, s == http.StatusRequestTimeout:
		return true
	case s >= 500 && s != http.StatusNotImplemented && s != http.StatusInsufficientStorage:
		return true
	}
	return false
}
