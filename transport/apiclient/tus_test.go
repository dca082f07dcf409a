package apiclient_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// requireRoute skips the test when this kino does not serve method path
// (a part built on a branch not merged into this one): an unknown route
// answers 404 "route ... not found", a known path 405.
func requireRoute(t *testing.T, k *httpapitest.Kino, key, method, path string) {
	t.Helper()
	req, err := http.NewRequest(method, k.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Tus-Resumable", "1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusMethodNotAllowed || (resp.StatusCode == http.StatusNotFound && bytes.Contains(body, []byte(`route `))) {
		t.Skipf("this kino does not serve %s %s yet (its branch is not merged)", method, path)
	}
}

// flaky fails every n-th PATCH before it reaches the server, as a dropped
// connection does.
type flaky struct {
	n     int64
	count atomic.Int64
	fails atomic.Int64
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && f.count.Add(1)%f.n == 0 {
		f.fails.Add(1)
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errors.New("connection reset by peer (test)")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// damaging flips a byte in the second PATCH's body on its way.
type damaging struct{ count atomic.Int64 }

func (d *damaging) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && d.count.Add(1) == 2 {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body[len(body)/2] ^= 0xff
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// failingAt is a file whose reads fail from offset on: the uploading
// process dies there.
type failingAt struct {
	r  io.ReaderAt
	at int64
}

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.at {
		return 0, errors.New("the process died (test)")
	}
	return f.r.ReadAt(p, off)
}

func TestTusUpload(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{Transcode: true}, domain.PlanPro)
	requireRoute(t, k, c.Key, "POST", "/v1/uploads/tus")
	clip, err := os.ReadFile(ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 2, true))
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(clip))
	const chunk = 16 << 10

	t.Run("checksums, a dropped connection", func(t *testing.T) {
		f := &flaky{n: 3}
		dropping := &apiclient.Client{BaseURL: c.BaseURL, Key: c.Key, HTTP: &http.Client{Transport: f}}
		var retries atomic.Int64
		dropping.Retry.OnRetry = func(apiclient.RetryInfo) { retries.Add(1) }
		apiclient.SetSleep(dropping, func(context.Context, time.Duration) error { return nil })
		var last int64
		u, err := dropping.UploadResumable(ctx(t), bytes.NewReader(clip), size, "clip.mp4", "main",
			apiclient.TusOptions{ChunkSize: chunk, Checksum: true, Progress: func(sent, total int64) {
				if sent < last || total != size {
					t.Errorf("progress %d/%d after %d", sent, total, last)
				}
				last = sent
			}})
		if err != nil || last != size || f.fails.Load() == 0 || retries.Load() != f.fails.Load() {
			t.Fatalf("upload: %v; progress %d of %d; %d drops, %d retries", err, last, size, f.fails.Load(), retries.Load())
		}
		if !strings.Contains(u.URL, "/v1/uploads/tus/") || u.VideoID() == "" {
			t.Fatalf("upload URL %q", u.URL)
		}
		v, err := c.Wait(ctx(t), u.VideoID(), apiclient.WaitOptions{Interval: poll})
		if err != nil || v.Filename != "clip.mp4" || v.OriginalSize != size || v.Collection.Slug != "main" {
			t.Fatalf("video: %+v %v", v, err)
		}
	})

	t.Run("a chunk damaged on the way", func(t *testing.T) {
		damaged := &apiclient.Client{BaseURL: c.BaseURL, Key: c.Key, HTTP: &http.Client{Transport: &damaging{}}}
		var refused []int
		damaged.Retry.OnRetry = func(r apiclient.RetryInfo) {
			if r.Err != nil {
				refused = append(refused, r.Err.Status)
			}
		}
		apiclient.SetSleep(damaged, func(context.Context, time.Duration) error { return nil })
		u, err := damaged.UploadResumable(ctx(t), bytes.NewReader(clip), size, "damaged.mp4", "main",
			apiclient.TusOptions{ChunkSize: chunk, Checksum: true})
		if err != nil || len(refused) != 1 || refused[0] != 460 {
			t.Fatalf("upload: %v; refusals %v", err, refused)
		}
		if v, err := c.Wait(ctx(t), u.VideoID(), apiclient.WaitOptions{Interval: poll}); err != nil || v.OriginalSize != size {
			t.Fatalf("video: %+v %v", v, err)
		}
	})

	t.Run("resumed by another process from the persisted URL", func(t *testing.T) {
		u, err := c.CreateResumable(ctx(t), size, "resumed.mp4", "main")
		if err != nil {
			t.Fatal(err)
		}
		if off, err := u.Offset(ctx(t)); err != nil || off != 0 {
			t.Fatalf("new upload's offset %d %v", off, err)
		}
		err = u.Send(ctx(t), failingAt{bytes.NewReader(clip), size / 2}, apiclient.TusOptions{ChunkSize: chunk})
		if err == nil || !strings.Contains(err.Error(), "died") {
			t.Fatalf("first process: %v", err)
		}
		persisted := u.URL
		later := &apiclient.Client{BaseURL: c.BaseURL, Key: c.Key}
		r := later.Resume(persisted)
		off, err := r.Offset(ctx(t))
		if err != nil || off == 0 || off > size/2 || r.Size != size {
			t.Fatalf("offset after the crash: %d of %d (%d) %v", off, r.Size, size, err)
		}
		var first int64 = -1
		if err := r.Send(ctx(t), bytes.NewReader(clip), apiclient.TusOptions{Progress: func(sent, _ int64) {
			if first < 0 {
				first = sent
			}
		}}); err != nil {
			t.Fatal(err)
		}
		if first != off {
			t.Fatalf("resumed from %d, the server had %d", first, off)
		}
		if v, err := c.Wait(ctx(t), r.VideoID(), apiclient.WaitOptions{Interval: poll}); err != nil || v.OriginalSize != size {
			t.Fatalf("video: %+v %v", v, err)
		}
	})

	t.Run("cancelled; other accounts", func(t *testing.T) {
		u, err := c.CreateResumable(ctx(t), size, "gone.mp4", "main")
		if err != nil {
			t.Fatal(err)
		}
		other := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("rival", domain.PlanPro)}
		if _, err := other.Resume(u.URL).Offset(ctx(t)); !apiclient.IsNotFound(err) {
			t.Fatalf("another account's upload: %v", err)
		}
		if err := u.Cancel(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if _, err := u.Offset(ctx(t)); !apiclient.IsNotFound(err) && !errors.Is(err, apiclient.ErrGone) {
			t.Fatalf("after cancel: %v", err)
		}
		if _, err := c.CreateResumable(ctx(t), size, "x.mp4", "nope"); !apiclient.IsNotFound(err) {
			t.Fatalf("unknown collection: %v", err)
		}
		if _, err := c.CreateResumable(ctx(t), size, "notes.txt", "main"); !errors.Is(err, apiclient.ErrUnsupported) && !errors.Is(err, apiclient.ErrBadRequest) {
			t.Fatalf("unsupported type: %v", err)
		}
	})
}

func TestDirectUpload(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	requireRoute(t, k, c.Key, "POST", "/v1/uploads")
	data := notAVideo(40 << 10)
	du, err := c.CreateDirectUpload(ctx(t), "main", 10*time.Minute)
	if err != nil || du.ID == "" || !strings.Contains(du.URL, "/v1/uploads/tus/direct/") || !du.ExpiresAt.After(time.Now()) ||
		du.ExpiresAt.After(k.Clock().Now().Add(10*time.Minute+time.Second)) {
		t.Fatalf("direct upload: %+v %v", du, err)
	}
	// Whoever gets the URL uploads without a key.
	anon := &apiclient.Client{}
	u, err := anon.CreateResumableAt(ctx(t), du.URL, int64(len(data)), "browser.mp4")
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Send(ctx(t), bytes.NewReader(data), apiclient.TusOptions{ChunkSize: 16 << 10}); err != nil {
		t.Fatal(err)
	}
	if u.VideoID() != du.ID {
		t.Fatalf("video id %s, the direct upload said %s", u.VideoID(), du.ID)
	}
	if v, err := c.Video(ctx(t), du.ID); err != nil || v.Filename != "browser.mp4" || v.OriginalSize != int64(len(data)) {
		t.Fatalf("video: %+v %v", v, err)
	}
	// Once only.
	if _, err := anon.CreateResumableAt(ctx(t), du.URL, int64(len(data)), "again.mp4"); err == nil {
		t.Fatal("a direct upload URL worked twice")
	} else if strings.Contains(err.Error(), strings.TrimPrefix(du.URL, k.BaseURL+"/uploads/tus/direct/")) {
		t.Fatalf("the token is in %q", err)
	}
	if _, err := c.CreateDirectUpload(ctx(t), "nope", 0); !apiclient.IsNotFound(err) {
		t.Fatalf("unknown collection: %v", err)
	}
	if _, err := c.CreateDirectUpload(ctx(t), "main", time.Second); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("expiring in a second: %v", err)
	}
	// Expired: refused (410), whoever holds it.
	late, err := c.CreateDirectUpload(ctx(t), "main", 0)
	if err != nil || !late.ExpiresAt.After(k.Clock().Now().Add(59*time.Minute)) {
		t.Fatalf("default expiry: %+v %v", late, err)
	}
	k.Clock().Advance(time.Hour + time.Second)
	if _, err := anon.CreateResumableAt(ctx(t), late.URL, int64(len(data)), "late.mp4"); !errors.Is(err, apiclient.ErrGone) {
		t.Fatalf("expired: %v", err)
	}
}

func TestAccount(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	requireRoute(t, k, c.Key, "GET", "/v1/account")
	upload(t, c, "a.mp4", notAVideo(3000))
	a, err := c.Account(ctx(t))
	if err != nil || a.Slug != "acme" || a.Plan != "pro" || a.CreatedAt.IsZero() || a.Limits.MaxDuration != 6*time.Hour || a.Limits.TranscodeConcurrency != 2 ||
		a.Limits.RequestsPerMinute != 300 || a.Limits.MaxUploadBytes != 10*domain.GiB ||
		a.Limits.ConcurrentUploads != 8 || a.RateLimit.Limit != 300 || a.RateLimit.Remaining <= 0 || a.RateLimit.Remaining >= 300 ||
		a.Videos[apiclient.StatusPending] != 1 || a.Videos[apiclient.StatusFailed] != 0 {
		t.Fatalf("account: %+v %v", a, err)
	}
	if a.RateLimit.Reset.Before(time.Now().Add(-time.Minute)) || a.RateLimit.Reset.After(time.Now().Add(2*time.Minute)) {
		t.Fatalf("reset %v", a.RateLimit.Reset)
	}
}

func TestRedeliver(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{Webhooks: true}, domain.PlanPro)
	requireRoute(t, k, c.Key, "POST", "/v1/webhooks/01ARZ3NDEKTSV4RRFFQ69G5FAV/deliveries/dlv_000000000000000000000000/redeliver")
	rcv := newReceiver(t)
	rcv.refuse.Store(http.StatusServiceUnavailable)
	hook, err := c.CreateWebhook(ctx(t), rcv.srv.URL, apiclient.EventVideoCompleted)
	if err != nil {
		t.Fatal(err)
	}
	rcv.setSecret(hook.Secret)
	first, err := c.TestWebhook(ctx(t), hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Two attempts (the test kino retries once), then it gives up.
	gaveUp := func() bool {
		ds, err := c.Deliveries(ctx(t), hook.ID, apiclient.PageOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(ds) > 0 && ds[0].DeliveryID == first && ds[0].GaveUp && ds[0].StatusCode == 503
	}
	for deadline := time.Now().Add(20 * time.Second); !gaveUp(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the delivery did not give up")
		}
	}
	rcv.refuse.Store(0)
	again, err := c.Redeliver(ctx(t), hook.ID, first)
	if err != nil || again == "" || again == first {
		t.Fatalf("redeliver: %q %v", again, err)
	}
	if e := rcv.next(t); e.Type != apiclient.EventWebhookTest || e.DeliveryID != again {
		t.Fatalf("redelivered: %+v", e)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ds, err := c.Deliveries(ctx(t), hook.ID, apiclient.PageOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 && ds[0].DeliveryID == again && ds[0].Succeeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log: %+v", ds)
		}
	}
	if _, err := c.Redeliver(ctx(t), hook.ID, again); !errors.Is(err, apiclient.ErrConflict) {
		t.Fatalf("redeliver a success: %v", err)
	}
	other := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("rival", domain.PlanPro)}
	if _, err := other.Redeliver(ctx(t), hook.ID, first); !apiclient.IsNotFound(err) {
		t.Fatalf("another account's delivery: %v", err)
	}
}
