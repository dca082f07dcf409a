// Package webhook tells subscribers about finished videos: a durable
// consumer turns each video.completed / video.failed into one delivery per
// matching subscription (a message in the KINO_DELIVERIES work queue), and
// a delivery consumer POSTs each one, signed, retrying with JetStream
// redelivery and a backoff, recording every attempt as an event.
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

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/projections"
)

// Consumer names.
const (
	FanoutDurable   = "webhook-fanout"
	DeliveryDurable = eventstore.DeliveryDurable
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
	// bucket (eventstore.SendState); older messages count them by their
	// delivery count.
	hCounted = "Kino-Attempts-Counted"
)

// Body is what a receiver gets.
type Body struct {
	ID        string `json:"id"`        // the event's id
	Type      string `json:"type"`      // video.completed, video.failed, webhook.test
	CreatedAt string `json:"createdAt"` // when the event happened
	Data      any    `json:"data"`      // {"video": Video} or, for tests, {"webhook": {...}}
}

// DeliveryID is the stable id of the delivery of one event to one
// subscription: the x-svc-delivery header, the same on every attempt.
func DeliveryID(eventID, webhookID string) string {
	sum := sha256.Sum256([]byte(eventID + ":" + webhookID))
	return "dlv_" + hex.EncodeToString(sum[:12])
}

// Config configures the fan-out and delivery workers.
type Config struct {
	Store *eventstore.Store
	Log   *slog.Logger

	Backoff      []time.Duration // waits before retries; len+1 attempts in all
	Timeout      time.Duration   // a receiver must answer within it (default 10 s)
	AllowPrivate bool            // allow loopback/private receivers (development, tests)
	Workers      int             // deliveries sent at once by this process (default 4)
	AckWait      time.Duration   // a sender silent this long lost its job (default Timeout + 30 s)
	Secrets      Opener          // opens sealed signing secrets; required to deliver

	// Fan-out only (it runs where the read models are: kino serve).
	DB        *projections.DB
	Projector interface {
		WaitFor(ctx context.Context, seq uint64) error
	}
	Render func(projections.Video) any // the Video resource of the API
}

func (c *Config) validate() error {
	if c.Store == nil {
		return errors.New("webhook: store is required")
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

// Enqueue queues the delivery of one event to one subscription. Enqueueing
// the same (event, subscription) again is a no-op (Nats-Msg-Id).
func Enqueue(ctx context.Context, store *eventstore.Store, w projections.Webhook, body Body, videoID string) (string, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	id := DeliveryID(body.ID, w.ID)
	err = store.Enqueue(ctx, w.ID, body.ID+"."+w.ID, raw, map[string]string{
		hWebhook: w.ID, hDelivery: id, hKind: body.Type, hEvent: body.ID, hVideo: videoID, hAccount: w.Account, hCounted: "1",
	})
	return id, err
}

// Fanout turns finished videos into deliveries.
type Fanout struct{ cfg Config }

// NewFanout checks cfg; the fan-out needs the read models.
func NewFanout(cfg Config) (*Fanout, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.DB == nil || cfg.Projector == nil || cfg.Render == nil {
		return nil, errors.New("webhook fan-out: db, projector and render are required")
	}
	return &Fanout{cfg: cfg}, nil
}

// Run consumes TranscodeSucceeded and TranscodeFailed until ctx ends.
func (f *Fanout) Run(ctx context.Context) error {
	return f.cfg.Store.Work(ctx, eventstore.WorkConfig{
		Durable: FanoutDurable,
		FilterSubjects: []string{
			domain.TypeFilter(domain.AggVideo, domain.TypeTranscodeSucceeded),
			domain.TypeFilter(domain.AggVideo, domain.TypeTranscodeFailed),
		},
		Concurrency: 1,
		// Created at the stream's end: a first start of a version with
		// webhook delivery must not send a webhook for every video ever
		// finished. Once created, it resumes where it left off.
		OnlyNew: true,
		Log:     f.cfg.Log,
	}, f.handle)
}

func (f *Fanout) handle(ctx context.Context, job *eventstore.Job) {
	e := job.Event
	log := f.cfg.Log.With("video_id", e.AggregateID, "event_id", e.ID)
	var kind, account string
	switch d := e.Data.(type) {
	case domain.TranscodeSucceeded:
		kind, account = domain.EventVideoCompleted, d.Account
	case domain.TranscodeFailed:
		if !d.Final { // a retry follows: not a failure of the video yet
			_ = job.Ack(ctx)
			return
		}
		kind, account = domain.EventVideoFailed, d.Account
	default:
		_ = job.Ack(ctx)
		return
	}
	if err := f.fanout(ctx, e, kind, account); err != nil {
		if ctx.Err() != nil {
			_ = job.Release()
			return
		}
		log.Warn("webhook fan-out failed; retrying", "err", err)
		_ = job.Retry(time.Second)
		return
	}
	if err := job.Ack(ctx); err != nil {
		log.Warn("ack fan-out", "err", err)
	}
}

func (f *Fanout) fanout(ctx context.Context, e domain.Event, kind, account string) error {
	// The read models must include the event: its video record and every
	// subscription made before it.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := f.cfg.Projector.WaitFor(wctx, e.Seq)
	cancel()
	if err != nil {
		return err
	}
	hooks, err := f.cfg.DB.Webhooks(account)
	if err != nil {
		return err
	}
	var subs []projections.Webhook
	for _, h := range hooks {
		if (domain.Webhook{Created: true, Events: h.Events}).Wants(kind) {
			subs = append(subs, h)
		}
	}
	if len(subs) == 0 {
		return nil
	}
	v, ok, err := f.cfg.DB.Video(e.AggregateID)
	if err != nil {
		return err
	}
	if !ok {
		f.cfg.Log.Info("video deleted before its webhook went out; nothing to send", "video_id", e.AggregateID, "kind", kind)
		return nil
	}
	body := Body{ID: e.ID, Type: kind, CreatedAt: domain.FormatTime(e.OccurredAt), Data: map[string]any{"video": f.cfg.Render(v)}}
	for _, h := range subs {
		if _, err := Enqueue(ctx, f.cfg.Store, h, body, e.AggregateID); err != nil {
			return err
		}
	}
	return nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// Tester sends test deliveries (POST /v1/webhooks/{id}/test).
type Tester struct {
	Store *eventstore.Store
}

// SendTest queues a signed webhook.test delivery to w, sent like any other
// (and logged in its deliveries), and returns its delivery id.
func (t Tester) SendTest(ctx context.Context, w projections.Webhook) (string, error) {
	body := Body{
		ID: t.Store.NewID(), Type: domain.EventWebhookTest, CreatedAt: domain.FormatTime(t.Store.Now()),
		Data: map[string]any{"webhook": map[string]any{"id": w.ID, "url": w.URL, "events": w.Events}},
	}
	return Enqueue(ctx, t.Store, w, body, "")
}
