package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/webhook"
)

// withWebhooks runs webhook delivery with test-sized timings, to receivers
// on loopback.
func withWebhooks(c *Config) {
	c.Workers.Senders = 2
	c.Workers.WebhookBackoff = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond}
	c.Workers.WebhookTimeout = 500 * time.Millisecond
	c.Workers.WebhookAckWait = 2 * time.Second
	c.Workers.AllowPrivate = true
}

// delivery is one request a receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTP endpoint that answers with the statuses it is
// given, in order (then 200), and records what it got.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	got      []delivery
	statuses []int
	stall    int // stall (past the sender's timeout) on this many first requests
	arrived  chan delivery
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{statuses: statuses, arrived: make(chan delivery, 100)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{header: r.Header.Clone(), body: body}
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, d)
		status := 200
		if n < len(rc.statuses) {
			status = rc.statuses[n]
		}
		stall := n < rc.stall
		rc.mu.Unlock()
		rc.arrived <- d
		if stall {
			<-r.Context().Done() // the sender gives up first
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// next waits for the next request the receiver gets.
func (rc *receiver) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-rc.arrived:
		return d
	case <-time.After(time.Minute):
		t.Fatal("no delivery arrived")
	}
	return delivery{}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// subscribe creates a subscription and returns its id and secret.
func (h *harness) subscribe(key, url string, events ...string) (string, string) {
	h.t.Helper()
	r := h.do("POST", "/v1/webhooks", key, map[string]any{"url": url, "events": events})
	if r.status != 201 {
		h.t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	m := r.json(h.t)
	return m["id"].(string), m["secret"].(string)
}

// verify checks a delivery as a receiver must: the HMAC of the raw body.
func verify(t *testing.T, d delivery, secret string) map[string]any {
	t.Helper()
	if got, want := d.header.Get("x-svc-signature"), webhook.Sign(secret, d.body); got != want || len(got) != 64 || strings.ToLower(got) != got {
		t.Fatalf("signature %q, recomputed %q", got, want)
	}
	if d.header.Get("Content-Type") != "application/json" || d.header.Get("x-svc-delivery") == "" {
		t.Fatalf("headers %v", d.header)
	}
	var m map[string]any
	if err := json.Unmarshal(d.body, &m); err != nil {
		t.Fatal(err)
	}
	if m["type"] != d.header.Get("x-svc-event") || len(m) != 4 {
		t.Fatalf("body %s", d.body)
	}
	checkTimestamp(t, "createdAt", m["createdAt"])
	return m
}

type deliveriesLog struct {
	Deliveries []struct {
		DeliveryID string  `json:"deliveryId"`
		Event      string  `json:"event"`
		Attempt    int     `json:"attempt"`
		Succeeded  bool    `json:"succeeded"`
		GaveUp     bool    `json:"gaveUp"`
		StatusCode *int    `json:"statusCode"`
		Error      *string `json:"error"`
	} `json:"deliveries"`
}

func (h *harness) deliveries(key, hookID string) deliveriesLog {
	h.t.Helper()
	h.settle()
	r := h.do("GET", "/v1/webhooks/"+hookID+"/deliveries", key, nil)
	if r.status != 200 {
		h.t.Fatalf("deliveries: %d %s", r.status, r.body)
	}
	var l deliveriesLog
	if err := json.Unmarshal(r.body, &l); err != nil {
		h.t.Fatal(err)
	}
	return l
}

// waitLogged polls the deliveries log until it holds n attempts.
func (h *harness) waitLogged(key, hookID string, n int) {
	h.t.Helper()
	// The read models, not the API: a fast poll would spend the rate limit.
	eventstoretest.Eventually(h.t, fmt.Sprintf("%d attempts logged", n), func() bool {
		l, err := h.m.db.Deliveries(hookID, n, 0)
		if err != nil {
			h.t.Fatal(err)
		}
		return len(l) >= n
	})
}

// waitDeliveriesDone waits until fan-out and delivery have finished every job.
func (h *harness) waitDeliveriesDone() {
	h.t.Helper()
	h.waitConsumerDone("", webhook.FanoutDurable)
	h.waitConsumerDone(queue.DeliveriesStream, webhook.DeliveryDurable)
}

func TestWebhooksCompletedAndFailedSignedAndIsolated(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder, withWebhooks)
	key := h.account("acme", domain.PlanBusiness)
	other := h.account("other", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	all, failedOnly, elsewhere := newReceiver(t), newReceiver(t), newReceiver(t)
	_, secret := h.subscribe(key, all.srv.URL+"/hooks", "video.completed", "video.failed")
	_, failedSecret := h.subscribe(key, failedOnly.srv.URL, "video.failed")
	h.subscribe(other, elsewhere.srv.URL, "video.completed", "video.failed")

	good := h.uploadID(key, "main", "good.mp4", clip(t))
	bad := h.uploadID(key, "main", "bad.mp4", notAVideo(4096))
	h.waitStatus(key, good, domain.StatusCompleted)
	h.waitStatus(key, bad, domain.StatusFailed)
	h.waitJobsDone()
	h.waitDeliveriesDone()

	if all.count() != 2 || failedOnly.count() != 1 || elsewhere.count() != 0 {
		t.Fatalf("deliveries: all %d (want 2), failed-only %d (want 1), other account %d (want 0)", all.count(), failedOnly.count(), elsewhere.count())
	}
	byType := map[string]map[string]any{}
	for _, d := range all.got {
		m := verify(t, d, secret)
		byType[m["type"].(string)] = m
		// The check can fail: the same body signed with another secret does not verify.
		if webhook.Sign(failedSecret, d.body) == d.header.Get("x-svc-signature") {
			t.Fatal("a body verified with another subscription's secret")
		}
	}
	completed := byType["video.completed"]["data"].(map[string]any)["video"].(map[string]any)
	if completed["id"] != good || completed["status"] != "COMPLETED" || completed["playlistUrl"] == nil || len(completed) != len(videoFields) {
		t.Fatalf("video.completed carries %v", completed)
	}
	// The body's Video is the API's, rendered from the events by the
	// fan-out: the same JSON GET /v1/videos/{id} answers.
	if got := h.do("GET", "/v1/videos/"+good, key, nil).json(t); !reflect.DeepEqual(got, completed) {
		t.Fatalf("video.completed carries\n%v\nGET answers\n%v", completed, got)
	}
	failed := byType["video.failed"]["data"].(map[string]any)["video"].(map[string]any)
	if got := h.do("GET", "/v1/videos/"+bad, key, nil).json(t); !reflect.DeepEqual(got, failed) {
		t.Fatalf("video.failed carries\n%v\nGET answers\n%v", failed, got)
	}
	if failed["id"] != bad || failed["status"] != "FAILED" || failed["errorMessage"] == nil {
		t.Fatalf("video.failed carries %v", failed)
	}
	if m := verify(t, failedOnly.got[0], failedSecret); m["type"] != "video.failed" {
		t.Fatalf("failed-only subscription got %v", m["type"])
	}
	// The body's id is the event's id: the TranscodeSucceeded in the stream.
	var succeededID string
	scan(t, h, []string{"video." + good + ".TranscodeSucceeded"}, func(e domain.Event, _ []byte) { succeededID = e.ID })
	if byType["video.completed"]["id"] != succeededID {
		t.Fatalf("body id %v, event id %s", byType["video.completed"]["id"], succeededID)
	}
}

func TestWebhookRetriedUntilDelivered(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withWebhooks)
	key := h.account("acme", domain.PlanPro)
	rc := newReceiver(t, 500, 500, 200)
	hook, secret := h.subscribe(key, rc.srv.URL, "video.completed")
	r := h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil)
	wantStatus(t, r, 202)
	deliveryID := r.json(t)["deliveryId"].(string)
	for i := 0; i < 3; i++ {
		d := rc.next(t)
		if m := verify(t, d, secret); m["type"] != "webhook.test" || d.header.Get("x-svc-delivery") != deliveryID {
			t.Fatalf("attempt %d: %v, delivery %s", i+1, m, d.header.Get("x-svc-delivery"))
		}
	}
	h.waitLogged(key, hook, 3)
	h.waitDeliveriesDone()
	l := h.deliveries(key, hook)
	if len(l.Deliveries) != 3 {
		t.Fatalf("log has %d attempts, want 3: %+v", len(l.Deliveries), l)
	}
	newest, oldest := l.Deliveries[0], l.Deliveries[2]
	if !newest.Succeeded || newest.Attempt != 3 || *newest.StatusCode != 200 {
		t.Fatalf("third attempt %+v", newest)
	}
	if oldest.Succeeded || oldest.Attempt != 1 || *oldest.StatusCode != 500 || oldest.GaveUp || oldest.DeliveryID != deliveryID {
		t.Fatalf("first attempt %+v", oldest)
	}
	if rc.count() != 3 {
		t.Fatalf("receiver got %d requests", rc.count())
	}
}

func TestWebhookTimeoutAndGivingUp(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withWebhooks)
	key := h.account("acme", domain.PlanPro)
	rc := newReceiver(t, 500, 500, 500)
	rc.stall = 1 // the first request gets no answer in time
	hook, _ := h.subscribe(key, rc.srv.URL, "video.failed")
	wantStatus(t, h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil), 202)
	h.waitLogged(key, hook, 3)
	h.waitDeliveriesDone()
	l := h.deliveries(key, hook)
	if len(l.Deliveries) != 3 || rc.count() != 3 {
		t.Fatalf("%d attempts logged, %d received; want 3 (1 + 2 retries)", len(l.Deliveries), rc.count())
	}
	first, last := l.Deliveries[2], l.Deliveries[0]
	if first.Error == nil || !strings.Contains(*first.Error, "timeout") || first.StatusCode != nil {
		t.Fatalf("stalled attempt %+v", first)
	}
	if !last.GaveUp || last.Succeeded || *last.StatusCode != 500 {
		t.Fatalf("last attempt %+v: want given up", last)
	}
}

func TestWebhookLoopbackRefusedWithoutTheFlag(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withWebhooks, func(c *Config) { c.Workers.AllowPrivate = false })
	key := h.account("acme", domain.PlanPro)
	rc := newReceiver(t)
	hook, _ := h.subscribe(key, rc.srv.URL, "video.completed")
	wantStatus(t, h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil), 202)
	h.waitLogged(key, hook, 3)
	h.waitDeliveriesDone()
	l := h.deliveries(key, hook)
	if rc.count() != 0 || len(l.Deliveries) != 3 || !l.Deliveries[0].GaveUp {
		t.Fatalf("receiver got %d; log %+v", rc.count(), l)
	}
	// The tenant learns that the address is not allowed, not what it is.
	if e := l.Deliveries[0].Error; e == nil || !strings.HasPrefix(*e, "address not allowed (private network)") || strings.Contains(*e, "127.0.0.1") {
		t.Fatalf("error %v", e)
	}
}

// POST /v1/webhooks/{id}/test is limited per subscription: 5 at once, then
// one every 12 s; the next answers 429 with the spec's body and
// Retry-After. Another subscription keeps its own allowance.
func TestWebhookTestIsRateLimited(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withWebhooks)
	key := h.account("acme", domain.PlanBusiness)
	rc := newReceiver(t)
	hook, _ := h.subscribe(key, rc.srv.URL, "video.completed")
	other, _ := h.subscribe(key, rc.srv.URL, "video.failed")
	for i := 0; i < 5; i++ {
		wantStatus(t, h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil), 202)
	}
	var limited *response
	for i := 0; i < 5 && limited == nil; i++ { // a token may have come back meanwhile on a slow machine
		if r := h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil); r.status != 202 {
			limited = &r
		}
	}
	if limited == nil {
		t.Fatal("10 tests in a row were all accepted")
	}
	wantError(t, *limited, 429, "Rate limit exceeded")
	if ra, err := strconv.Atoi(limited.header.Get("Retry-After")); err != nil || ra < 1 || ra > 12 {
		t.Fatalf("Retry-After %q", limited.header.Get("Retry-After"))
	}
	wantStatus(t, h.do("POST", "/v1/webhooks/"+other+"/test", key, nil), 202)
}

func TestWebhookSurvivesRestartBetweenAttempts(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	slow := func(c *Config) { c.Workers.WebhookBackoff = []time.Duration{time.Second} }
	h := start(t, data, withWebhooks, slow)
	key := h.account("acme", domain.PlanPro)
	rc := newReceiver(t, 503) // fails once, then 200
	hook, secret := h.subscribe(key, rc.srv.URL, "video.completed")
	wantStatus(t, h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil), 202)
	first := rc.next(t)
	h.waitLogged(key, hook, 1) // the failed attempt is recorded
	h.stop()                   // between the failed attempt and its retry

	h = start(t, data, withWebhooks, slow)
	second := rc.next(t)
	if second.header.Get("x-svc-delivery") != first.header.Get("x-svc-delivery") {
		t.Fatal("the retry is not the same delivery")
	}
	verify(t, second, secret)
	h.waitDeliveriesDone()
	if l := h.deliveries(key, hook); len(l.Deliveries) != 2 || !l.Deliveries[0].Succeeded || l.Deliveries[1].Succeeded {
		t.Fatalf("log after restart %+v", l)
	}
}

func TestDeletedSubscriptionGetsNoFurtherDeliveries(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withWebhooks, func(c *Config) { c.Workers.WebhookBackoff = []time.Duration{200 * time.Millisecond} })
	key := h.account("acme", domain.PlanPro)
	rc := newReceiver(t, 500)
	hook, _ := h.subscribe(key, rc.srv.URL, "video.completed")
	wantStatus(t, h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil), 202)
	rc.next(t) // the first attempt fails; a retry is scheduled
	wantStatus(t, h.do("DELETE", "/v1/webhooks/"+hook, key, nil), 200)
	h.waitDeliveriesDone()
	if rc.count() != 1 {
		t.Fatalf("deleted subscription got %d requests", rc.count())
	}
	wantError(t, h.do("GET", "/v1/webhooks/"+hook+"/deliveries", key, nil), 404, "Not found")
	wantError(t, h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil), 404, "Not found")
}
