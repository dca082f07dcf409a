// Package apiclient is the Go client of kino's v1 API: videos (multipart
// and resumable tus uploads, reading, listing, deleting, their event
// history, waiting for processing), collections, webhooks (with their
// deliveries log, tests and redelivery, and the signature check a receiver
// needs), direct upload URLs and the account's usage.
//
// It imports only the standard library, kino's wire types and
// golang-jwt (SignPlaybackToken). A Client is safe for concurrent use once
// its fields are set.
//
//	c := &apiclient.Client{BaseURL: "https://video.example.com/v1", Key: os.Getenv("KINO_API_KEY")}
//	v, err := c.Video(ctx, id)
//
// Rate limits and overload: a 429 (Too Many Requests) or 503 (Service
// Unavailable) answer is retried after the server's Retry-After, at most
// Retry.Max times and never waiting longer than Retry.MaxWait, and the
// wait ends with the context. A 429 is always retried: kino refuses with
// 429 before doing anything (rate limit, uploads in flight, test
// allowance). A 503 is retried for idempotent requests (GET, HEAD, PUT,
// DELETE) and for uploads, which kino refuses before reading the file:
// nothing was stored, so sending it again is safe. A 503 to another POST
// (creating a collection or a webhook) may come after the write reached
// the event store, so it is returned to the caller instead of being sent
// twice. See docs/client.md.
//
// The API key is sent only to BaseURL's origin and never appears in an
// error or a log line.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Version is the client's version, sent in its User-Agent.
const Version = "1"

// Client calls one kino instance with one API key. The zero value of each
// optional field is a sensible default.
type Client struct {
	// BaseURL is the API's base address, ending in /v1, e.g.
	// http://localhost:8080/v1.
	BaseURL string
	// Key is the API key (svc_live_...). Direct upload URLs need none.
	Key string
	// HTTP sends the requests; nil is a client without an overall timeout
	// (uploads are long: bound calls with their context).
	HTTP *http.Client
	// UserAgent, when set, is put before the client's own product token
	// ("myapp/2.1 kino-go/1").
	UserAgent string
	// Retry bounds the retries of 429 and 503 answers.
	Retry RetryPolicy

	// sleep waits between retries (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

// RetryPolicy bounds retries of 429 and 503 answers.
type RetryPolicy struct {
	// Max is how many times one request is sent again (default 3;
	// negative: never).
	Max int
	// MaxWait is the longest Retry-After honoured (default 60 s, the
	// longest kino asks for). A longer one is not waited for: the
	// *Error is returned, with its RetryAfter.
	MaxWait time.Duration
	// OnRetry, when set, is told of each retry before the wait.
	OnRetry func(RetryInfo)
}

// RetryInfo describes one retry.
type RetryInfo struct {
	Method  string        // the request's method
	Path    string        // its path (never its query or a token)
	Attempt int           // the attempt that failed, from 1
	Err     *Error        // the 429 or 503 answer (nil for a tus chunk that got no answer)
	Wait    time.Duration // how long the client waits before the next
}

func (p RetryPolicy) max() int {
	switch {
	case p.Max < 0:
		return 0
	case p.Max == 0:
		return 3
	}
	return p.Max
}

func (p RetryPolicy) maxWait() time.Duration {
	if p.MaxWait <= 0 {
		return 60 * time.Second
	}
	return p.MaxWait
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) userAgent() string {
	ua := "kino-go/" + Version
	if c.UserAgent != "" {
		ua = c.UserAgent + " " + ua
	}
	return ua
}

func (c *Client) base() string { return strings.TrimRight(c.BaseURL, "/") }

// call is one API request.
type call struct {
	method string
	url    string // absolute
	// body makes the request's body for each attempt (nil: none).
	body        func() (io.Reader, int64, error)
	contentType string
	header      http.Header
	// refusedFirst: the server answers 503 before acting (an upload), so
	// a 503 is safe to retry whatever the method.
	refusedFirst bool
	// noKey: never send the API key (direct upload URLs).
	noKey bool
}

func jsonBody(v any) func() (io.Reader, int64, error) {
	raw, err := json.Marshal(v)
	return func() (io.Reader, int64, error) {
		return bytes.NewReader(raw), int64(len(raw)), err
	}
}

// retryable reports whether an answer of status to c may be sent again.
func (c call) retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		switch c.method {
		case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
			return true
		}
		return c.refusedFirst
	}
	return false
}

// maxBody bounds a JSON answer read into memory.
const maxBody = 16 << 20

// response is a complete answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// send sends cl, retrying 429 and 503 as the policy allows. A non-2xx
// answer is an *Error; the response is returned with it.
func (c *Client) send(ctx context.Context, cl call) (response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, cl)
		if err != nil {
			return resp, err
		}
		if resp.status/100 == 2 {
			return resp, nil
		}
		apiErr := newError(resp)
		if !cl.retryable(resp.status) || attempt > c.Retry.max() {
			return resp, apiErr
		}
		wait := apiErr.RetryAfter
		if wait <= 0 {
			wait = time.Duration(1<<min(attempt-1, 5)) * time.Second
		}
		if wait > c.Retry.maxWait() {
			return resp, apiErr
		}
		if c.Retry.OnRetry != nil {
			c.Retry.OnRetry(RetryInfo{Method: cl.method, Path: redactPath(cl.url), Attempt: attempt, Err: apiErr, Wait: wait})
		}
		if err := c.wait(ctx, wait); err != nil {
			return resp, err
		}
	}
}

func (c *Client) wait(ctx context.Context, d time.Duration) error {
	if c.sleep != nil {
		return c.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// once sends one attempt of cl and reads its answer.
func (c *Client) once(ctx context.Context, cl call) (response, error) {
	var body io.Reader
	var size int64
	if cl.body != nil {
		var err error
		if body, size, err = cl.body(); err != nil {
			return response{}, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, cl.url, body)
	if err != nil {
		return response{}, redactErr(cl.method, cl.url, err)
	}
	if body != nil {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	if cl.contentType != "" {
		req.Header.Set("Content-Type", cl.contentType)
	}
	req.Header.Set("User-Agent", c.userAgent())
	if !cl.noKey && c.Key != "" && sameOrigin(cl.url, c.BaseURL) {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return response{}, redactErr(cl.method, cl.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return response{}, redactErr(cl.method, cl.url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: raw}, nil
}

// do sends cl and decodes a 2xx JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, cl call, out any) error {
	resp, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.body, out); err != nil {
		return fmt.Errorf("kino: %s %s: decoding the answer: %w", cl.method, redactPath(cl.url), err)
	}
	return nil
}

// api is a call to path (under BaseURL) with query q.
func (c *Client) api(method, path string, q url.Values) call {
	u := c.base() + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return call{method: method, url: u}
}

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.do(ctx, c.api(http.MethodGet, path, q), out)
}

// sameOrigin reports whether u has base's scheme and host.
func sameOrigin(u, base string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(base)
	return err1 == nil && err2 == nil && strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// redactPath is u's path without its query, and without the token of a
// direct upload URL (/uploads/tus/direct/<token>), for errors and logs.
func redactPath(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(malformed URL)"
	}
	segs := strings.Split(p.EscapedPath(), "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "direct" && i > 0 && segs[i-1] == "tus" {
			segs[i+1] = "REDACTED"
		}
	}
	return strings.Join(segs, "/")
}

// redactErr is a transport error without the URL's query or token.
func redactErr(method, u string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &TransportError{Method: method, Path: redactPath(u), Err: err}
}

// TransportError is a request that got no answer (connection refused,
// reset, timeout, context ended).
type TransportError struct {
	Method, Path string
	Err          error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("kino: %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
