package webhook

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// Deliverer sends queued deliveries.
type Deliverer struct {
	cfg    Config
	client *http.Client
}

// NewDeliverer checks cfg and builds the delivery client.
func NewDeliverer(cfg Config) (*Deliverer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Secrets == nil {
		return nil, errors.New("webhook: delivery needs the secret key (Secrets) to sign")
	}
	return &Deliverer{cfg: cfg, client: newClient(cfg.Timeout, cfg.AllowPrivate)}, nil
}

// Run sends deliveries until ctx ends.
func (d *Deliverer) Run(ctx context.Context) error {
	return d.cfg.Store.Work(ctx, eventstore.WorkConfig{
		Stream:      eventstore.DeliveriesStream,
		Durable:     DeliveryDurable,
		Concurrency: d.cfg.Workers,
		AckWait:     d.cfg.AckWait,
		Log:         d.cfg.Log,
	}, d.handle)
}

// handle makes one attempt. Every attempt is recorded on the subscription's
// stream; a failed one comes back after the backoff for its number, until
// the last, which gives up.
func (d *Deliverer) handle(ctx context.Context, job *eventstore.Job) {
	hookID, deliveryID, kind := job.Header(hWebhook), job.Header(hDelivery), job.Header(hKind)
	log := d.cfg.Log.With("webhook_id", hookID, "delivery_id", deliveryID, "attempt", job.Delivered)
	if !domain.ValidID(hookID) {
		log.Error("malformed delivery message; dropped")
		_ = job.Ack(ctx)
		return
	}
	stream := domain.StreamID{Aggregate: domain.AggWebhook, ID: hookID}
	w, err := eventstore.Current[domain.Webhook](ctx, d.cfg.Store, stream)
	if err != nil {
		d.later(ctx, job, time.Second, log, err)
		return
	}
	if !w.Wants(kind) { // deleted since: no further deliveries
		log.Info("subscription deleted; delivery dropped")
		_ = job.Ack(ctx)
		return
	}
	base := domain.DeliveryFailed{Account: w.Account, DeliveryID: deliveryID, EventID: job.Header(hEvent), Kind: kind,
		VideoID: job.Header(hVideo), Attempt: job.Delivered}
	attempts := len(d.cfg.Backoff) + 1
	if job.Delivered > attempts { // the last attempt's sender died before recording it
		base.Error, base.GaveUp = "gave up: the last attempt was interrupted", true
		d.record(ctx, stream, base, log)
		_ = job.Ack(ctx)
		return
	}

	secret, err := d.secret(w)
	if err != nil {
		// kino's own fault (this worker's key is not kino serve's): never
		// sent unsigned; retried later, counted as an attempt.
		log.Error("cannot open the webhook's signing secret: is this process's secret key (secret.key, KINO_SECRET_KEY) the one kino serve uses?", "err", err)
		d.later(ctx, job, time.Minute, log, err)
		return
	}
	a := post(ctx, d.client, w.URL, secret, kind, deliveryID, job.Data)
	if ctx.Err() != nil { // shutting down mid-POST: not the receiver's fault
		_ = job.Release()
		return
	}
	// The POST happened: recording and acknowledging it must not be cut
	// short by a shutdown, or the receiver would get it again.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if a.ok() {
		ok := domain.DeliverySucceeded{Account: w.Account, DeliveryID: deliveryID, EventID: base.EventID, Kind: kind,
			VideoID: base.VideoID, Attempt: job.Delivered, StatusCode: a.status, DurationMs: a.duration.Milliseconds()}
		if _, err := d.cfg.Store.Record(ctx, stream, ok); err != nil {
			log.Warn("record delivery", "err", err)
		}
		log.Info("webhook delivered", "status", a.status, "duration_ms", a.duration.Milliseconds())
		_ = job.Ack(ctx)
		return
	}
	base.StatusCode, base.Error, base.DurationMs = a.status, a.describe(), a.duration.Milliseconds()
	base.GaveUp = job.Delivered >= attempts
	d.record(ctx, stream, base, log)
	if base.GaveUp {
		log.Warn("webhook delivery given up", "error", base.Error)
		_ = job.Ack(ctx)
		return
	}
	delay := d.cfg.Backoff[job.Delivered-1]
	log.Info("webhook attempt failed; retrying", "error", base.Error, "retry_in", delay)
	_ = job.Retry(delay)
}

// secret is w's signing secret in clear: opened from its sealed form, or
// as written by a v1 WebhookSubscribed (before secrets were sealed).
func (d *Deliverer) secret(w domain.Webhook) (string, error) {
	if w.SealedSecret == "" {
		if w.Secret == "" {
			return "", errors.New("the subscription has no signing secret")
		}
		return w.Secret, nil
	}
	return d.cfg.Secrets.Open(w.ID, w.SealedSecret)
}

func (d *Deliverer) record(ctx context.Context, stream domain.StreamID, f domain.DeliveryFailed, log *slog.Logger) {
	if _, err := d.cfg.Store.Record(ctx, stream, f); err != nil {
		log.Warn("record delivery", "err", err)
	}
}

// later hands the job back after delay for a failure of kino's own (the
// event store unreachable). The redelivery still counts as an attempt.
func (d *Deliverer) later(ctx context.Context, job *eventstore.Job, delay time.Duration, log *slog.Logger, err error) {
	if ctx.Err() != nil {
		_ = job.Release()
		return
	}
	log.Warn("delivery postponed", "err", err)
	_ = job.Retry(delay)
}
