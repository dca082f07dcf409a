package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/wire"
)

// Consumer names.
const (
	FanoutDurable   = queue.FanoutDurable
	DeliveryDurable = queue.DeliveryDurable
)

// DefaultBackoff is the wait before each retry of a failed delivery.
var DefaultBackoff = []time.Duration{10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute,
	30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour}

// Message headers of a queued delivery.
const (
	hWebhook  = "Kino-Webhook-Id"
	hDelivery = "Kino-Delivery-Id"
	hKind     = "Kino-Event-Kind"
	hEvent    = "Kino-Event-Id"
	hVideo    = "Kino-Video-Id"
	hAccount  = "Kino-Account"
	// hCounted marks a message whose attempts are counted in the attempts
	// bucket (queue.SendState); older messages count them by their
	// delivery count.
	hCounted = "Kino-Attempts-Counted"
)

// Body is what a receiver gets (transport/wire).
type Body = wire.WebhookBody

// DeliveryID is the stable id of the delivery of one event to one
// subscription: the x-svc-delivery header, the same on every attempt.
func DeliveryID(eventID, webhookID string) string {
	sum := sha256.Sum256([]byte(eventID + ":" + webhookID))
	return "dlv_" + hex.EncodeToString(sum[:12])
}

// Store is what the webhook workers need of the event log
// (eventstore.Store): a subscription read (eventstore.Current) and its
// attempts recorded, and the events up to one read by subject (Next,
// Between, and LastOf to know where a walk ends) to fold a video, a collection and the subscriptions as they
// stood at that event.
type Store interface {
	eventstore.Log
	Record(ctx context.Context, id domain.StreamID, payloads ...domain.Payload) ([]domain.Event, error)
	Next(ctx context.Context, filter string, from uint64) (domain.Event, bool, error)
	LastOf(ctx context.Context, filter string) (uint64, error)
	Between(ctx context.Context, filter string, from, to uint64, fn func(domain.Event) error) error
}

// Enqueuer queues a delivery on the delivery queue (queue.Queues): one
// message per subscription subject, dropped when msgID was queued within
// the duplicate window.
type Enqueuer interface {
	Enqueue(ctx context.Context, sub, msgID string, body []byte, header map[string]string) error
}

// Queue is what the fan-out and the senders need of the work queues
// (queue.Queues): consuming the event stream (the fan-out) and the
// delivery queue (the senders), the fan-out's ack floor, the senders'
// shared locks and attempt counts, and queueing deliveries.
type Queue interface {
	Enqueuer
	Work(ctx context.Context, cfg queue.WorkConfig, handle func(ctx context.Context, job *queue.Job)) error
	AckFloor(ctx context.Context, stream, durable string) (uint64, error)
	OpenSendState(ctx context.Context) (*queue.SendState, error)
}

// Config configures the fan-out and delivery workers.
type Config struct {
	Store Store
	Queue Queue
	Log   *slog.Logger

	Backoff      []time.Duration // waits before retries; len+1 attempts in all
	Timeout      time.Duration   // a receiver must answer within it (default 10 s)
	AllowPrivate bool            // allow loopback/private receivers (development, tests)
	Workers      int             // deliveries sent at once by this process (default 4)
	AckWait      time.Duration   // a sender silent this long lost its job (default Timeout + 30 s)
	Secrets      Opener          // opens sealed signing secrets; required to deliver

	// CDNURL is the public base of media ({cdn_url}, no trailing slash)
	// written into the Video of webhook bodies; the fan-out needs it. Every
	// process running the fan-out must have the API's --cdn-url, or a
	// receiver gets other URLs than GET /v1/videos/{id} answers.
	CDNURL string
}

func (c *Config) validate() error {
	if c.Store == nil || c.Queue == nil {
		return errors.New("webhook: store and queue are required")
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.AckWait <= 0 {
		c.AckWait = c.Timeout + 30*time.Second
	}
	return nil
}

// Opener opens a webhook's sealed signing secret (transport/seal.Key).
type Opener interface {
	Open(id, sealed string) (string, error)
}

// Enqueue queues the delivery of one event to subscription hookID of
// account. Enqueueing the same (event, subscription) again within the
// delivery queue's duplicate window (24 h) is a no-op (Nats-Msg-Id).
func Enqueue(ctx context.Context, q Enqueuer, hookID, account string, body Body, videoID string) (string, error) {
	id := DeliveryID(body.ID, hookID)
	return id, enqueue(ctx, q, hookID, account, body, videoID, id, body.ID+"."+hookID)
}

// enqueue queues body to hookID as delivery deliveryID, once per msgID
// within the queue's duplicate window.
func enqueue(ctx context.Context, q Enqueuer, hookID, account string, body Body, videoID, deliveryID, msgID string) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return q.Enqueue(ctx, hookID, msgID, raw, map[string]string{
		hWebhook: hookID, hDelivery: deliveryID, hKind: body.Type, hEvent: body.ID, hVideo: videoID, hAccount: account, hCounted: "1",
	})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// Tester sends test deliveries (POST /v1/webhooks/{id}/test).
type Tester struct {
	Store IDClock
	Queue Enqueuer
}

// IDClock gives a test delivery its id and time (eventstore.Store).
type IDClock interface {
	NewID() string
	Now() time.Time
}

// SendTest queues a signed webhook.test delivery to w, sent like any other
// (and logged in its deliveries), and returns its delivery id.
func (t Tester) SendTest(ctx context.Context, w projections.Webhook) (string, error) {
	id := t.Store.NewID()
	body := testBody(w, id, t.Store.Now())
	return Enqueue(ctx, t.Queue, w.ID, w.Account, body, "")
}

// testBody is the body of the webhook.test delivery id to w. Its createdAt
// is the instant in the id (a ULID's first 48 bits), so a redelivery can
// send the same body again; now when id is no ULID.
func testBody(w projections.Webhook, id string, now time.Time) Body {
	if u, err := ulid.ParseStrict(id); err == nil {
		now = ulid.Time(u.Time())
	}
	return Body{ID: id, Type: domain.EventWebhookTest, CreatedAt: domain.FormatTime(now),
		Data: wire.WebhookData{Webhook: &wire.TestWebhook{ID: w.ID, URL: w.URL, Events: w.Events}}}
}
