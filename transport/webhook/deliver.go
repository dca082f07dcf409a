package webhook

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
)

// Deliverer sends queued deliveries.
type Deliverer struct {
	cfg    Config
	client *http.Client
	state  *queue.SendState
	onBusy func(deliveryID string) // tests: called on each busy handback
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
	st, err := d.cfg.Queue.OpenSendState(ctx)
	if err != nil {
		return err
	}
	d.state = st
	return d.cfg.Queue.Work(ctx, queue.WorkConfig{
		Stream:      queue.DeliveriesStream,
		Durable:     DeliveryDurable,
		Concurrency: d.cfg.Workers,
		AckWait:     d.cfg.AckWait,
		Log:         d.cfg.Log,
	}, d.handle)
}

// Busy handbacks: a delivery whose subscription has a POST under way comes
// back after busyDelay times its delivery count, at most maxBusyDelay. A
// delivery behind a fast POST waits a fraction of a second; one queued
// behind a receiver that never answers is fetched once every 10 s, so a
// long queue costs the senders a cheap fetch per message per 10 s, not a
// spin, and the deliveries of other subscriptions are fetched in between.
const (
	busyDelay    = 250 * time.Millisecond
	maxBusyDelay = 10 * time.Second
)

// handle makes one attempt, under the subscription's send lock: at most
// one POST per subscription is under way across all processes. Every
// attempt is recorded on the subscription's stream; a failed one comes
// back after the backoff for its number, until the last, which gives up.
func (d *Deliverer) handle(ctx context.Context, job *queue.Job) {
	hookID, deliveryID, kind := job.Header(hWebhook), job.Header(hDelivery), job.Header(hKind)
	log := d.cfg.Log.With("webhook_id", hookID, "delivery_id", deliveryID)
	if !domain.ValidID(hookID) || !validDeliveryID(deliveryID) {
		log.Error("malformed delivery message; dropped")
		_ = job.Ack(ctx)
		return
	}
	lock, err := d.state.TryLock(ctx, hookID)
	if errors.Is(err, queue.ErrBusy) {
		// Not an attempt: the count of attempts is kept apart from the
		// message's delivery count (see attempt below).
		_ = job.Retry(min(busyDelay*time.Duration(job.Delivered), maxBusyDelay))
		if d.onBusy != nil {
			d.onBusy(deliveryID)
		}
		return
	}
	if err != nil {
		d.later(ctx, job, time.Second, log, err)
		return
	}
	// Held until the attempt is recorded and the message acked or handed
	// back, and kept alive while the POST runs.
	lockCtx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(queue.SendLockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-lockCtx.Done():
				return
			case <-t.C:
				if err := lock.Renew(lockCtx); err != nil && lockCtx.Err() == nil {
					log.Warn("send lock lost", "err", err)
				}
			}
		}
	}()
	defer func() {
		stopRenew()
		<-renewed
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := lock.Release(rctx); err != nil {
			log.Warn("release send lock", "err", err)
		}
	}()
	d.attempt(ctx, job, hookID, deliveryID, kind, log)
}

// attempt is one POST of a delivery whose send lock is held.
//
// The attempt number comes from the attempts bucket (queue.SendState),
// not from the message's delivery count, which also counts busy handbacks.
// The count is raised before the POST: a POST cut off by a crash or a
// shutdown counts as an attempt, and a delivery whose last attempt was cut
// off gives up. Messages queued before the count existed (no hCounted
// header) take at least their delivery count, as before.
func (d *Deliverer) attempt(ctx context.Context, job *queue.Job, hookID, deliveryID, kind string, log *slog.Logger) {
	stream := domain.WebhookStream(hookID)
	w, err := eventstore.Current[domain.Webhook](ctx, d.cfg.Store, stream)
	if err != nil {
		d.later(ctx, job, time.Second, log, err)
		return
	}
	if !w.Wants(kind) { // deleted since: no further deliveries
		log.Info("subscription deleted; delivery dropped")
		d.finish(ctx, job, deliveryID, log)
		return
	}
	made, rev, err := d.state.Attempts(ctx, deliveryID)
	if err != nil {
		d.later(ctx, job, time.Second, log, err)
		return
	}
	if job.Header(hCounted) == "" {
		made = max(made, job.Delivered-1)
	}
	n := made + 1
	log = log.With("attempt", n)
	base := domain.DeliveryFailed{Account: w.Account, DeliveryID: deliveryID, EventID: job.Header(hEvent), Kind: kind,
		VideoID: job.Header(hVideo), Attempt: n}
	attempts := len(d.cfg.Backoff) + 1
	if n > attempts { // the last attempt's sender died before recording it
		base.Error, base.GaveUp = "gave up: the last attempt was interrupted", true
		d.record(ctx, stream, base, log)
		d.finish(ctx, job, deliveryID, log)
		return
	}
	if err := d.state.SetAttempts(ctx, deliveryID, n, rev); err != nil {
		d.later(ctx, job, time.Second, log, err)
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
			VideoID: base.VideoID, Attempt: n, StatusCode: a.status, DurationMs: a.duration.Milliseconds()}
		if _, err := d.cfg.Store.Record(ctx, stream, ok); err != nil {
			log.Warn("record delivery", "err", err)
		}
		log.Info("webhook delivered", "status", a.status, "duration_ms", a.duration.Milliseconds())
		d.finish(ctx, job, deliveryID, log)
		return
	}
	base.StatusCode, base.Error, base.DurationMs = a.status, a.describe(d.cfg.Timeout), a.duration.Milliseconds()
	base.GaveUp = n >= attempts
	d.record(ctx, stream, base, log)
	if base.GaveUp {
		log.Warn("webhook delivery given up", "error", base.Error, "cause", a.err)
		d.finish(ctx, job, deliveryID, log)
		return
	}
	delay := d.cfg.Backoff[n-1]
	log.Info("webhook attempt failed; retrying", "error", base.Error, "cause", a.err, "retry_in", delay)
	_ = job.Retry(delay)
}

// finish acks a delivery that needs no further attempt and forgets its
// count.
func (d *Deliverer) finish(ctx context.Context, job *queue.Job, deliveryID string, log *slog.Logger) {
	if err := job.Ack(ctx); err != nil {
		log.Warn("ack delivery", "err", err)
		return
	}
	if err := d.state.ForgetAttempts(ctx, deliveryID); err != nil {
		log.Warn("forget attempts", "err", err)
	}
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
// event store unreachable). It makes no POST, so it is not an attempt.
func (d *Deliverer) later(ctx context.Context, job *queue.Job, delay time.Duration, log *slog.Logger, err error) {
	if ctx.Err() != nil {
		_ = job.Release()
		return
	}
	log.Warn("delivery postponed", "err", err)
	_ = job.Retry(delay)
}

// validDeliveryID reports whether id has DeliveryID's form ("dlv_" and 24
// lowercase hex digits), which is also a valid KV key.
func validDeliveryID(id string) bool {
	if len(id) != 28 || !strings.HasPrefix(id, "dlv_") {
		return false
	}
	for _, c := range id[4:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
