package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/webhook"
	"github.com/kino-video/kino/transport/wire"
)

// flakyReceiver fails every POST until ok is set, and keeps what it got.
type flakyReceiver struct {
	srv *httptest.Server
	ok  atomic.Bool
	mu  sync.Mutex
	got []flakyReceipt
}

type flakyReceipt struct {
	delivery, signature, eventID string
	body                         []byte
	status                       int
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	rc := &flakyReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b struct{ ID string }
		_ = json.Unmarshal(body, &b)
		status := http.StatusInternalServerError
		if rc.ok.Load() {
			status = http.StatusOK
		}
		rc.mu.Lock()
		rc.got = append(rc.got, flakyReceipt{delivery: r.Header.Get(webhook.HeaderDelivery), signature: r.Header.Get(webhook.HeaderSignature),
			eventID: b.ID, body: body, status: status})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *flakyReceiver) receipts() []flakyReceipt {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]flakyReceipt(nil), rc.got...)
}

// A delivery whose flakyReceiver failed until it gave up is sent again on
// request, to the flakyReceiver now answering: a new delivery id, the same
// body, signed, and logged in the deliveries like any other. A delivery
// that succeeded, is still retrying, or was redelivered already is a 409;
// another account's, an unknown or a malformed one a 404.
func TestRedeliverAGivenUpDeliveryEndToEnd(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) {
		c.Webhooks = webhook.Tester{Store: c.Store.(*eventstore.Store), Queue: queue.New(c.Store.(*eventstore.Store))}
		c.Redeliver = webhook.Redeliverer{Store: c.Store.(*eventstore.Store), Queue: queue.New(c.Store.(*eventstore.Store)), CDNURL: c.Origin.CDNURL}
	})
	opener, ok := a.s.cfg.Secrets.(webhook.Opener)
	if !ok {
		t.Fatal("the test's secret key cannot open secrets")
	}
	d, err := webhook.NewDeliverer(webhook.Config{Store: a.store, Queue: queue.New(a.store), Log: quiet, Backoff: []time.Duration{time.Millisecond},
		AllowPrivate: true, Secrets: opener, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan error, 1)
	go func() { running <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-running })

	key := a.account("acme", domain.PlanPro)
	otherKey := a.account("globex", domain.PlanPro)
	rc := newFlakyReceiver(t)
	r := a.do("POST", "/v1/webhooks", key, `{"url":"`+rc.srv.URL+`/hook","events":["video.completed"]}`)
	wantCode(t, r, 201)
	hook := decodeBody[wire.CreatedWebhook](t, r)
	r = a.do("POST", "/v1/webhooks/"+hook.ID+"/test", key, "")
	wantCode(t, r, 202)
	original := decodeBody[wire.TestQueued](t, r).DeliveryID

	deliveries := func() []wire.Delivery {
		r := a.do("GET", "/v1/webhooks/"+hook.ID+"/deliveries", key, "")
		wantCode(t, r, 200)
		return decodeBody[wire.Deliveries](t, r).Deliveries
	}
	find := func(id string, pred func(wire.Delivery) bool) bool {
		for _, d := range deliveries() {
			if d.DeliveryID == id && pred(d) {
				return true
			}
		}
		return false
	}
	eventstoretest.Eventually(t, "the delivery to give up", func() bool { return find(original, func(d wire.Delivery) bool { return d.GaveUp }) })
	failedBody := rc.receipts()[0]

	// Someone else's webhook, or a delivery not of this webhook: 404.
	path := "/v1/webhooks/" + hook.ID + "/deliveries/" + original + "/redeliver"
	wantError(t, a.do("POST", path, otherKey, ""), 404, "Not found")
	wantError(t, a.do("POST", "/v1/webhooks/"+hook.ID+"/deliveries/dlv_000000000000000000000000/redeliver", key, ""), 404, "Not found")
	wantError(t, a.do("POST", "/v1/webhooks/"+hook.ID+"/deliveries/nope/redeliver", key, ""), 404, "Not found")
	wantError(t, a.do("POST", path, "", ""), 401, "Missing API key")

	rc.ok.Store(true)
	r = a.do("POST", path, key, "")
	wantCode(t, r, 202)
	again := decodeBody[struct{ DeliveryID string }](t, r).DeliveryID
	if again == "" || again == original {
		t.Fatalf("redelivery id %q (original %q)", again, original)
	}
	eventstoretest.Eventually(t, "the redelivery to succeed", func() bool {
		return find(again, func(d wire.Delivery) bool { return d.Succeeded && d.Attempt == 1 })
	})
	var sent flakyReceipt
	for _, rcpt := range rc.receipts() {
		if rcpt.delivery == again {
			sent = rcpt
		}
	}
	if sent.status != 200 || sent.eventID != failedBody.eventID || string(sent.body) != string(failedBody.body) {
		t.Fatalf("redelivered %q (event %s), first sent %q", sent.body, sent.eventID, failedBody.body)
	}
	if sent.signature != webhook.Sign(hook.Secret, sent.body) {
		t.Fatal("the redelivery is not signed with the webhook's secret")
	}

	// Once only; and a delivery that succeeded has nothing to send again.
	wantError(t, a.do("POST", path, key, ""), 409, "Conflict")
	wantError(t, a.do("POST", "/v1/webhooks/"+hook.ID+"/deliveries/"+again+"/redeliver", key, ""), 409, "Conflict")

	// A delivery still being retried is not redelivered.
	retrying := "dlv_0123456789abcdef01234567"
	evs, err := a.store.Record(context.Background(), domain.WebhookStream(hook.ID), domain.DeliveryFailed{Account: "acme",
		DeliveryID: retrying, EventID: a.store.NewID(), Kind: domain.EventWebhookTest, Attempt: 1, Error: "HTTP 500", StatusCode: 500})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(evs[0].Seq)
	wantError(t, a.do("POST", "/v1/webhooks/"+hook.ID+"/deliveries/"+retrying+"/redeliver", key, ""), 409, "Conflict")

	// The redelivery is an event on the webhook's stream.
	n := 0
	err = a.store.Scan(context.Background(), []string{domain.TypeFilter(domain.AggWebhook, domain.TypeDeliveryRedelivered)}, func(e domain.Event) error {
		if d := e.Data.(domain.DeliveryRedelivered); d.RedeliveryOf == original && d.DeliveryID == again && e.AggregateID == hook.ID {
			n++
		}
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("%d DeliveryRedelivered events, %v", n, err)
	}
}
