package apiclient_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// mp4Box passes the upload's container check; what follows it does not
// decode, so such a video ends FAILED.
var mp4Box = []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2")

// notAVideo is n bytes that sniff as MP4 and fail to transcode.
func notAVideo(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 31)
	}
	copy(b, mp4Box)
	return b
}

// poll is Wait's interval in the tests: 240 reads a minute stay within
// the pro plan's 300 however slowly ffmpeg runs on a loaded machine (a
// faster poll meets the rate limit, and Wait then honours a real
// Retry-After of up to a minute).
const poll = 250 * time.Millisecond

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// setup starts kino with an account on plan and a collection "main", and
// returns a client of it.
func setup(t *testing.T, o httpapitest.Options, plan domain.Plan) (*httpapitest.Kino, *apiclient.Client) {
	t.Helper()
	k := httpapitest.Start(t, o)
	c := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("acme", plan)}
	if _, err := c.CreateCollection(ctx(t), "main", "Main"); err != nil {
		t.Fatal(err)
	}
	return k, c
}

func upload(t *testing.T, c *apiclient.Client, name string, data []byte) string {
	t.Helper()
	up, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), name, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	return up.Video.ID
}

func TestVideos(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	other := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("rival", domain.PlanPro)}
	data := notAVideo(4000)
	var calls int
	var last int64
	up, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "first.mp4", "main", func(sent, total int64) {
		if sent < last || total != int64(len(data)) {
			t.Errorf("progress %d/%d after %d", sent, total, last)
		}
		calls, last = calls+1, sent
	})
	if err != nil || up.Video.Status != apiclient.StatusPending || up.Video.Collection != "main" || up.Video.Filename != "first.mp4" {
		t.Fatalf("upload: %+v %v", up, err)
	}
	if calls == 0 || last != int64(len(data)) {
		t.Fatalf("progress reached %d of %d in %d calls", last, len(data), calls)
	}
	ids := []string{up.Video.ID}
	for i := range 4 {
		ids = append(ids, upload(t, c, fmt.Sprintf("v%d.mp4", i), data))
	}

	v, err := c.Video(ctx(t), ids[0])
	if err != nil || v.ID != ids[0] || v.Status != apiclient.StatusPending || v.Done() || v.OriginalSize != int64(len(data)) ||
		v.Collection.Slug != "main" || v.Collection.Name != "Main" || v.PlaylistURL != nil || v.Progress == nil {
		t.Fatalf("video: %+v %v", v, err)
	}
	if v.CreatedAt.IsZero() || v.UpdatedAt.Before(v.CreatedAt) || time.Since(v.CreatedAt) > time.Hour || v.CreatedAt.Location() != time.UTC {
		t.Fatalf("times: %v %v", v.CreatedAt, v.UpdatedAt)
	}

	page, err := c.Videos(ctx(t), apiclient.ListOptions{Collection: "main", Status: apiclient.StatusPending, Limit: 2, Offset: 1})
	if err != nil || len(page) != 2 || page[0].ID != ids[3] || page[1].ID != ids[2] {
		t.Fatalf("page: %v %v", page, err)
	}
	if page, err := c.Videos(ctx(t), apiclient.ListOptions{Status: apiclient.StatusCompleted}); err != nil || len(page) != 0 {
		t.Fatalf("COMPLETED: %v %v", page, err)
	}
	if _, err := c.Videos(ctx(t), apiclient.ListOptions{Limit: 101}); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("limit 101: %v", err)
	}
	var all []string
	for v, err := range c.AllVideos(ctx(t), apiclient.ListOptions{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, v.ID)
	}
	if fmt.Sprint(all) != fmt.Sprint([]string{ids[4], ids[3], ids[2], ids[1], ids[0]}) {
		t.Fatalf("all videos: %v, uploaded %v", all, ids)
	}
	for range c.AllVideos(ctx(t), apiclient.ListOptions{Limit: 2}) {
		break // stopping early is allowed
	}

	events, err := c.VideoEvents(ctx(t), ids[0])
	if err != nil || len(events) != 1 || events[0].Type != "UploadAccepted" || events[0].OccurredAt.IsZero() ||
		!bytes.Contains(events[0].Data, []byte(`"filename":"first.mp4"`)) {
		t.Fatalf("events: %+v %v", events, err)
	}

	// Another account sees none of it.
	if _, err := other.Video(ctx(t), ids[0]); !apiclient.IsNotFound(err) {
		t.Fatalf("another account's video: %v", err)
	}
	if err := other.DeleteVideo(ctx(t), ids[0]); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("another account's delete: %v", err)
	}
	if _, err := other.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "x.mp4", "main", nil); !apiclient.IsNotFound(err) {
		t.Fatalf("upload into another account's collection: %v", err)
	}

	if err := c.DeleteVideo(ctx(t), ids[0]); err != nil {
		t.Fatal(err)
	}
	_, err = c.Video(ctx(t), ids[0])
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Label != "Not found" || apiErr.Message != "video not found" || apiErr.RequestID == "" {
		t.Fatalf("deleted video: %#v", err)
	}
	if events, err := c.VideoEvents(ctx(t), ids[0]); err != nil || len(events) != 2 || events[1].Type != "Deleted" {
		t.Fatalf("history after delete: %+v %v", events, err)
	}
	if err := c.DeleteVideo(ctx(t), ids[0]); !apiclient.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}

	for _, tc := range []struct {
		name, file string
		data       []byte
		want       error
	}{
		{"unsupported type", "notes.txt", data, apiclient.ErrUnsupported},
		{"not a container", "x.mp4", []byte(strings.Repeat("hello", 100)), apiclient.ErrUnsupported},
		{"empty", "x.mp4", nil, apiclient.ErrBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Upload(ctx(t), bytes.NewReader(tc.data), int64(len(tc.data)), tc.file, "main", nil); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestUploadTooLarge(t *testing.T) {
	t.Parallel()
	plans := domain.DefaultPlans()
	l := plans[domain.PlanFree]
	l.MaxUploadBytes = 64 << 10
	plans[domain.PlanFree] = l
	_, c := setup(t, httpapitest.Options{Plans: plans}, domain.PlanFree)
	// kino refuses by Content-Length (over the limit + 1 MiB) before it
	// reads the body, and the client, having asked 100-continue, sends
	// none of it. (A transport that waits for the 100 long enough on a
	// loaded machine.)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ExpectContinueTimeout = time.Minute
	c.HTTP = &http.Client{Transport: tr}
	data := notAVideo(2 << 20)
	var sent int64
	_, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "big.mp4", "main", func(s, _ int64) { sent = s })
	var apiErr *apiclient.Error
	if !errors.Is(err, apiclient.ErrTooLarge) || !errors.As(err, &apiErr) || apiErr.Label != "File too large" || sent != 0 {
		t.Fatalf("oversize: %v, %d bytes of the file sent", err, sent)
	}
	// Within the slack, it is refused while streaming.
	data = notAVideo(200 << 10)
	if _, err = c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "big.mp4", "main", nil); !errors.Is(err, apiclient.ErrTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
}

func TestCollections(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	got, err := c.CreateCollection(ctx(t), "trailers", "Trailers")
	if err != nil || got.Slug != "trailers" || got.Name != "Trailers" || got.VideoCount != 0 || got.CreatedAt.IsZero() || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Fatalf("create: %+v %v", got, err)
	}
	if _, err := c.CreateCollection(ctx(t), "trailers", "Again"); !errors.Is(err, apiclient.ErrConflict) {
		t.Fatalf("slug in use: %v", err)
	}
	if _, err := c.CreateCollection(ctx(t), "Bad_Slug", "x"); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("bad slug: %v", err)
	}
	list, err := c.Collections(ctx(t))
	if err != nil || len(list) != 2 || list[0].Slug != "main" || list[1].Slug != "trailers" {
		t.Fatalf("list: %+v %v", list, err)
	}
	renamed, err := c.RenameCollection(ctx(t), "trailers", "Movie trailers")
	if err != nil || renamed.Name != "Movie trailers" || renamed.Slug != "trailers" {
		t.Fatalf("rename: %+v %v", renamed, err)
	}
	if one, err := c.Collection(ctx(t), "trailers"); err != nil || one.Name != "Movie trailers" {
		t.Fatalf("get: %+v %v", one, err)
	}
	id := upload(t, c, "a.mp4", notAVideo(3000))
	if one, err := c.Collection(ctx(t), "main"); err != nil || one.VideoCount != 1 {
		t.Fatalf("count: %+v %v", one, err)
	}
	var apiErr *apiclient.Error
	if err := c.DeleteCollection(ctx(t), "main"); !errors.As(err, &apiErr) || !errors.Is(err, apiclient.ErrConflict) || !strings.Contains(apiErr.Message, "still holds 1 video") {
		t.Fatalf("delete non-empty: %v", err)
	}
	if err := c.DeleteVideo(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteCollection(ctx(t), "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Collection(ctx(t), "main"); !apiclient.IsNotFound(err) {
		t.Fatalf("deleted: %v", err)
	}
	other := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("rival", domain.PlanPro)}
	for name, err := range map[string]error{
		"get":    func() error { _, err := other.Collection(ctx(t), "trailers"); return err }(),
		"rename": func() error { _, err := other.RenameCollection(ctx(t), "trailers", "Mine"); return err }(),
		"delete": other.DeleteCollection(ctx(t), "trailers"),
	} {
		if !apiclient.IsNotFound(err) {
			t.Errorf("another account's %s: %v", name, err)
		}
	}
}

// receiver is a webhook endpoint built on apiclient.WebhookHandler.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	events chan apiclient.WebhookEvent
	// refuse, when not 0, is the status answered instead of handling.
	refuse atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{events: make(chan apiclient.WebhookEvent, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if s := r.refuse.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		r.mu.Lock()
		secret := r.secret
		r.mu.Unlock()
		apiclient.WebhookHandler(secret, func(_ *http.Request, e apiclient.WebhookEvent) error {
			r.events <- e
			return nil
		}).ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setSecret(s string) {
	r.mu.Lock()
	r.secret = s
	r.mu.Unlock()
}

func (r *receiver) next(t *testing.T) apiclient.WebhookEvent {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery within 30 s")
	}
	return apiclient.WebhookEvent{}
}

func TestWebhooks(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{Webhooks: true}, domain.PlanPro)
	rcv := newReceiver(t)
	url := rcv.srv.URL + "/hooks/kino"
	created, err := c.CreateWebhook(ctx(t), url, apiclient.EventVideoFailed, apiclient.EventVideoCompleted)
	if err != nil || created.ID == "" || created.URL != url || !strings.HasPrefix(created.Secret, "whsec_") || created.CreatedAt.IsZero() ||
		fmt.Sprint(created.Events) != "[video.completed video.failed]" {
		t.Fatalf("create: %+v %v", created, err)
	}
	rcv.setSecret(created.Secret)
	if _, err := c.CreateWebhook(ctx(t), "ftp://x/", apiclient.EventVideoFailed); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("bad url: %v", err)
	}
	list, err := c.Webhooks(ctx(t))
	if err != nil || len(list) != 1 || list[0].ID != created.ID || list[0].URL != url {
		t.Fatalf("list: %+v %v", list, err)
	}
	if one, err := c.Webhook(ctx(t), created.ID); err != nil || one.ID != created.ID || !one.CreatedAt.Equal(created.CreatedAt) {
		t.Fatalf("get: %+v %v", one, err)
	}

	// Two test deliveries, verified by the receiver, logged by kino.
	var sent []string
	for range 2 {
		id, err := c.TestWebhook(ctx(t), created.ID)
		if err != nil || !strings.HasPrefix(id, "dlv_") {
			t.Fatalf("test: %q %v", id, err)
		}
		sent = append(sent, id)
		e := rcv.next(t)
		if e.Type != apiclient.EventWebhookTest || e.DeliveryID != id || e.Webhook == nil || e.Webhook.ID != created.ID || e.Webhook.URL != url || e.Video != nil || e.CreatedAt.IsZero() {
			t.Fatalf("test delivery: %+v", e)
		}
	}
	var ds []apiclient.Delivery
	deadline := time.Now().Add(10 * time.Second)
	for len(ds) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("deliveries log: %+v", ds)
		}
		if ds, err = c.Deliveries(ctx(t), created.ID, apiclient.PageOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := ds[0]; d.DeliveryID != sent[1] || !d.Succeeded || d.StatusCode != 204 || d.Error != "" || d.Event != apiclient.EventWebhookTest ||
		d.VideoID != "" || d.Attempt != 1 || d.At.IsZero() {
		t.Fatalf("newest delivery: %+v", d)
	}
	if page, err := c.Deliveries(ctx(t), created.ID, apiclient.PageOptions{Limit: 1, Offset: 1}); err != nil || len(page) != 1 || page[0].DeliveryID != sent[0] {
		t.Fatalf("page 2: %+v %v", page, err)
	}
	var all []string
	for d, err := range c.AllDeliveries(ctx(t), created.ID, apiclient.PageOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, d.DeliveryID)
	}
	if fmt.Sprint(all) != fmt.Sprint([]string{sent[1], sent[0]}) {
		t.Fatalf("all deliveries: %v", all)
	}

	other := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("rival", domain.PlanPro)}
	if _, err := other.Webhook(ctx(t), created.ID); !apiclient.IsNotFound(err) {
		t.Fatalf("another account's webhook: %v", err)
	}
	if _, err := other.Deliveries(ctx(t), created.ID, apiclient.PageOptions{}); !apiclient.IsNotFound(err) {
		t.Fatalf("another account's deliveries: %v", err)
	}
	if _, err := other.TestWebhook(ctx(t), created.ID); !apiclient.IsNotFound(err) {
		t.Fatalf("another account's test: %v", err)
	}
	if err := other.DeleteWebhook(ctx(t), created.ID); !apiclient.IsNotFound(err) {
		t.Fatalf("another account's delete: %v", err)
	}

	if err := c.DeleteWebhook(ctx(t), created.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Webhook(ctx(t), created.ID); !apiclient.IsNotFound(err) {
		t.Fatalf("deleted: %v", err)
	}
}

// A webhook's test allowance (5 at once) answers 429 with Retry-After:
// the client waits (here: moves the server's clock) and sends it again.
func TestTestWebhookRateLimitIsRetried(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	created, err := c.CreateWebhook(ctx(t), "https://example.test/hook", apiclient.EventVideoCompleted)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	apiclient.SetSleep(c, func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		k.Clock().Advance(d)
		return nil
	})
	for range 6 {
		if _, err := c.TestWebhook(ctx(t), created.ID); err != nil {
			t.Fatal(err)
		}
	}
	if len(waits) != 1 || waits[0] < time.Second || waits[0] > 12*time.Second {
		t.Fatalf("waits %v", waits)
	}
}

func TestRateLimitRetryAfter(t *testing.T) {
	t.Parallel()
	plans := domain.DefaultPlans()
	l := plans[domain.PlanFree]
	l.RequestsPerMinute = 3
	plans[domain.PlanFree] = l
	k := httpapitest.Start(t, httpapitest.Options{Plans: plans})
	key := k.Account("tiny", domain.PlanFree)

	var retries []apiclient.RetryInfo
	var waits []time.Duration
	c := &apiclient.Client{BaseURL: k.BaseURL, Key: key, Retry: apiclient.RetryPolicy{OnRetry: func(r apiclient.RetryInfo) { retries = append(retries, r) }}}
	apiclient.SetSleep(c, func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		k.Clock().Advance(d) // the minute passes at once
		return nil
	})
	for i := range 3 {
		if _, err := c.Collections(ctx(t)); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if len(waits) != 0 {
		t.Fatalf("waited within the plan: %v", waits)
	}
	// The fourth is refused (429, Retry-After) and sent again after the wait.
	if _, err := c.Collections(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0] < 50*time.Second || waits[0] > 60*time.Second || len(retries) != 1 {
		t.Fatalf("waits %v, retries %+v", waits, retries)
	}
	if r := retries[0]; r.Method != "GET" || r.Path != "/v1/collections" || r.Attempt != 1 || r.Wait != waits[0] ||
		r.Err.Status != 429 || r.Err.Label != "Rate limit exceeded" || r.Err.RetryAfter != waits[0] {
		t.Fatalf("retry info %+v", r)
	}

	t.Run("longer than MaxWait", func(t *testing.T) {
		impatient := &apiclient.Client{BaseURL: k.BaseURL, Key: key, Retry: apiclient.RetryPolicy{MaxWait: 10 * time.Second}}
		apiclient.SetSleep(impatient, func(context.Context, time.Duration) error { t.Fatal("waited"); return nil })
		for range 3 {
			_, _ = impatient.Collections(ctx(t))
		}
		_, err := impatient.Collections(ctx(t))
		var apiErr *apiclient.Error
		if !apiclient.IsRateLimited(err) || !errors.As(err, &apiErr) || apiErr.RetryAfter <= 10*time.Second {
			t.Fatalf("got %v", err)
		}
		k.Clock().Advance(time.Minute)
	})
	t.Run("no retries", func(t *testing.T) {
		never := &apiclient.Client{BaseURL: k.BaseURL, Key: key, Retry: apiclient.RetryPolicy{Max: -1}}
		var err error
		for range 4 {
			_, err = never.Collections(ctx(t))
		}
		if !apiclient.IsRateLimited(err) {
			t.Fatalf("got %v", err)
		}
		k.Clock().Advance(time.Minute)
	})
	t.Run("bounded", func(t *testing.T) {
		twice := &apiclient.Client{BaseURL: k.BaseURL, Key: key, Retry: apiclient.RetryPolicy{Max: 2}}
		var n int
		apiclient.SetSleep(twice, func(context.Context, time.Duration) error { n++; return nil }) // time stands still
		for range 3 {
			_, _ = twice.Collections(ctx(t))
		}
		if _, err := twice.Collections(ctx(t)); !apiclient.IsRateLimited(err) || n != 2 {
			t.Fatalf("got %v after %d waits", err, n)
		}
		k.Clock().Advance(time.Minute)
	})
	t.Run("the wait ends with the context", func(t *testing.T) {
		c, cancel := context.WithCancel(ctx(t))
		// The real wait (60 s) is cut short by the context.
		patient := &apiclient.Client{BaseURL: k.BaseURL, Key: key, Retry: apiclient.RetryPolicy{OnRetry: func(apiclient.RetryInfo) { cancel() }}}
		for range 3 {
			_, _ = patient.Collections(ctx(t))
		}
		if _, err := patient.Collections(c); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
}

// holdUpload starts a multipart upload that stops mid-file and returns a
// function that finishes it.
func holdUpload(t *testing.T, k *httpapitest.Kino, key string) (finish func()) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	req, err := http.NewRequest("POST", k.BaseURL+"/videos", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	done := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	_ = mw.WriteField("collection", "main")
	fw, _ := mw.CreateFormFile("file", "held.mp4")
	// Enough that the client's buffers go out and the server reads it.
	_, _ = fw.Write(notAVideo(256 << 10))
	return func() {
		_, _ = fw.Write(notAVideo(1000))
		_ = mw.Close()
		_ = pw.Close()
		if s := <-done; s != 202 {
			t.Errorf("held upload: %d", s)
		}
	}
}

// A server with all its upload slots taken answers 503 (Retry-After: 5)
// before reading the file: the client sends the file again once one is free.
func TestUploadRetriedOn503(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{Configure: func(cfg *httpapi.Config) { cfg.Uploads.MaxInFlight = 1 }}, domain.PlanPro)
	finish := holdUpload(t, k, c.Key)
	// Wait until the server streams it: it holds the one slot.
	full := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); k.UploadsStreaming() == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the held upload never reached the server")
			}
		}
	}
	full()

	var waits []time.Duration
	c.Retry.Max = 100
	apiclient.SetSleep(c, func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		if len(waits) == 1 {
			finish() // the slot frees up
		} else {
			time.Sleep(5 * time.Millisecond) // it is released just after the held upload's answer
		}
		return nil
	})
	data := notAVideo(5000)
	var sent int64
	up, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "retried.mp4", "main", func(s, _ int64) { sent = s })
	if err != nil || up.Video.Status != apiclient.StatusPending {
		t.Fatalf("upload: %+v %v", up, err)
	}
	if len(waits) == 0 || waits[0] != 5*time.Second || sent != int64(len(data)) {
		t.Fatalf("waits %v, sent %d", waits, sent)
	}
	if v, err := c.Video(ctx(t), up.Video.ID); err != nil || v.OriginalSize != int64(len(data)) {
		t.Fatalf("stored: %+v %v", v, err)
	}

	// A reader that cannot be rewound is not sent twice.
	finish2 := holdUpload(t, k, c.Key)
	defer finish2()
	full()
	apiclient.SetSleep(c, func(context.Context, time.Duration) error { return nil })
	_, err = c.Upload(ctx(t), io.MultiReader(bytes.NewReader(data)), int64(len(data)), "once.mp4", "main", nil)
	if err == nil || !strings.Contains(err.Error(), "cannot be rewound") {
		t.Fatalf("non-seekable: %v", err)
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	_, c := setup(t, httpapitest.Options{Transcode: true, Webhooks: true}, domain.PlanPro)
	rcv := newReceiver(t)
	hook, err := c.CreateWebhook(ctx(t), rcv.srv.URL, apiclient.EventVideoCompleted, apiclient.EventVideoFailed)
	if err != nil {
		t.Fatal(err)
	}
	rcv.setSecret(hook.Secret)
	clip, err := os.ReadFile(ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 1, false))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("COMPLETED", func(t *testing.T) {
		id := upload(t, c, "clip.mp4", clip)
		var polls int
		v, err := c.Wait(ctx(t), id, apiclient.WaitOptions{Interval: poll, OnPoll: func(apiclient.Video) { polls++ }})
		if err != nil || v.Status != apiclient.StatusCompleted || v.PlaylistURL == nil || !strings.HasSuffix(*v.PlaylistURL, id+"/hls/master.m3u8") ||
			v.Duration == nil || len(v.Resolutions) == 0 || polls == 0 {
			t.Fatalf("wait: %+v %v after %d polls", v, err, polls)
		}
		// The delivery verifies with the secret, and carries the same video.
		e := rcv.next(t)
		if e.Type != apiclient.EventVideoCompleted || e.Video == nil || e.Video.ID != id || *e.Video.PlaylistURL != *v.PlaylistURL ||
			!e.CreatedAt.Equal(e.Video.UpdatedAt) || !strings.HasPrefix(e.DeliveryID, "dlv_") {
			t.Fatalf("delivery: %+v", e)
		}
	})
	t.Run("FAILED", func(t *testing.T) {
		id := upload(t, c, "broken.mp4", notAVideo(3000))
		v, err := c.Wait(ctx(t), id, apiclient.WaitOptions{Interval: poll})
		var failed *apiclient.FailedError
		if !errors.Is(err, apiclient.ErrFailed) || !errors.As(err, &failed) || failed.Video.ID != id || v.Status != apiclient.StatusFailed ||
			v.ErrorMessage == nil || !strings.Contains(err.Error(), *v.ErrorMessage) || !strings.Contains(err.Error(), id) {
			t.Fatalf("wait: %+v %v", v, err)
		}
		if e := rcv.next(t); e.Type != apiclient.EventVideoFailed || e.Video == nil || e.Video.ID != id || e.Video.ErrorMessage == nil {
			t.Fatalf("delivery: %+v", e)
		}
	})
	t.Run("context", func(t *testing.T) {
		gone, cancel := context.WithCancel(ctx(t))
		cancel()
		if _, err := c.Wait(gone, "01ARZ3NDEKTSV4RRFFQ69G5FAV", apiclient.WaitOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if _, err := c.Wait(ctx(t), "01ARZ3NDEKTSV4RRFFQ69G5FAV", apiclient.WaitOptions{}); !apiclient.IsNotFound(err) {
			t.Fatalf("unknown video: %v", err)
		}
	})
}

// Wait outlasts the account's rate limit: a poll refused with 429 after
// the client's retries is tried again after Retry-After.
func TestWaitThroughTheRateLimit(t *testing.T) {
	t.Parallel()
	plans := domain.DefaultPlans()
	l := plans[domain.PlanFree]
	l.RequestsPerMinute = 3
	plans[domain.PlanFree] = l
	k, c := setup(t, httpapitest.Options{Plans: plans, Transcode: true}, domain.PlanFree)
	c.Retry.Max = -1
	var waits []time.Duration
	apiclient.SetSleep(c, func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		k.Clock().Advance(d)
		return nil
	})
	if _, err := c.Collections(ctx(t)); err != nil { // the second request of three
		t.Fatal(err)
	}
	id := upload(t, c, "broken.mp4", notAVideo(3000)) // the third: Wait's first read is refused
	v, err := c.Wait(ctx(t), id, apiclient.WaitOptions{Interval: 20 * time.Millisecond})
	if !errors.Is(err, apiclient.ErrFailed) || v.ID != id || len(waits) == 0 || waits[0] < 50*time.Second {
		t.Fatalf("wait: %+v %v after waits %v", v, err, waits)
	}
}
