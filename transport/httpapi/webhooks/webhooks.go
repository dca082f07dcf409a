package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/wire"
)

// Host is what the webhook endpoints use of the API server.
type Host interface {
	Decode(w http.ResponseWriter, r *http.Request, v any) error
	// Account is the authenticated caller's account.
	Account(r *http.Request) string
	// Wrote records a write of the caller's account (its last sequence):
	// the account's next requests see it; the answer does not wait.
	Wrote(r *http.Request, seq uint64)
	Logger(r *http.Request) *slog.Logger
	// IntParam reads an integer query parameter within [lo, hi].
	IntParam(r *http.Request, name string, def, lo, hi int) (int, error)
}

// Store is the event log subscriptions are written to, and its ids.
type Store interface {
	eventstore.Log
	NewID() string
}

// DB reads the subscriptions and their deliveries log (projections.DB).
type DB interface {
	Webhooks(account string) ([]projections.Webhook, error)
	Webhook(account, id string) (projections.Webhook, bool, error)
	Deliveries(webhookID string, limit, offset int) ([]projections.Delivery, error)
	DeliveryAttempts(webhookID, deliveryID string) ([]projections.Delivery, error)
	Redelivered(webhookID, deliveryID string) (projections.Redelivery, bool, error)
}

// Sealer seals a webhook's signing secret for its id before it is stored:
// neither the event stream nor the read models hold it in clear.
type Sealer interface {
	Seal(id, secret string) (string, error)
}

// Tester queues a webhook.test delivery to a subscription
// (webhook.Sender).
type Tester interface {
	SendTest(ctx context.Context, w projections.Webhook) (deliveryID string, err error)
}

// Redeliverer queues a delivery that gave up once more, as a new delivery
// (webhook.Redeliverer), and records it; first is its first attempt.
type Redeliverer interface {
	Redeliver(ctx context.Context, w projections.Webhook, first projections.Delivery) (deliveryID string, seq uint64, err error)
}

// Config wires the webhook endpoints. Tester and Redeliver may be nil
// (their endpoints then answer 503); Secrets nil makes creation fail.
type Config struct {
	Store     Store
	DB        DB
	Secrets   Sealer
	Tester    Tester
	Redeliver Redeliverer
	Now       func() time.Time
	Host      Host
}

// Handler serves /v1/webhooks.
type Handler struct {
	cfg          Config
	tests        testLimiter // POST /v1/webhooks/{id}/test, per subscription
	redeliveries sync.Mutex  // one redelivery decided at a time on this node
}

// New prepares the endpoints.
func New(cfg Config) *Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}
}

// Routes mounts the endpoints under /webhooks with route, which
// authenticates the caller.
func (h *Handler) Routes(route func(path string, fn func(http.ResponseWriter, *http.Request) error, method string)) {
	route("/webhooks", h.createWebhook, http.MethodPost)
	route("/webhooks", h.listWebhooks, http.MethodGet)
	route("/webhooks/{id}", h.getWebhook, http.MethodGet)
	route("/webhooks/{id}", h.deleteWebhook, http.MethodDelete)
	route("/webhooks/{id}/deliveries", h.listDeliveries, http.MethodGet)
	route("/webhooks/{id}/test", h.testWebhook, http.MethodPost)
	route("/webhooks/{id}/deliveries/{deliveryId}/redeliver", h.redeliver, http.MethodPost)
}

// Render is a subscription as the API shows it: never its secret (only
// the create response carries it).
func Render(w projections.Webhook) wire.Webhook {
	return wire.Webhook{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: domain.FormatTime(w.CreatedAt)}
}

// writeTimeout bounds a write a request started, also after the client
// went away.
const writeTimeout = 30 * time.Second

// execute runs a command on a subscription for a request: it does not
// stop when the client goes away.
func execute(r *http.Request, s eventstore.Log, id domain.StreamID, cmd any) (eventstore.Result[domain.Webhook], error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
	defer cancel()
	return eventstore.Execute[domain.Webhook](ctx, s, id, cmd)
}

func errBadRequest(format string, args ...any) error {
	return domain.E("", domain.Invalid, format, args...)
}

func errNotFound(what string) error {
	return domain.E("", domain.NotFound, "%s not found", what)
}

func webhookStream(id string) domain.StreamID {
	return domain.WebhookStream(id)
}

// newWebhookSecret is "whsec_" and 32 random bytes in hex.
func newWebhookSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "whsec_" + hex.EncodeToString(b[:]), nil
}

// createWebhook answers 201 with the signing secret: the only time it is
// shown.
func (h *Handler) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL    *string  `json:"url"`
		Events []string `json:"events"`
	}
	if err := h.cfg.Host.Decode(w, r, &body); err != nil {
		return err
	}
	if body.URL == nil {
		return errBadRequest("url is required")
	}
	if body.Events == nil {
		return errBadRequest("events is required: a non-empty list of %s", strings.Join(domain.EventKinds, ", "))
	}
	secret, err := newWebhookSecret()
	if err != nil {
		return err
	}
	acct := h.cfg.Host.Account(r)
	id := h.cfg.Store.NewID()
	if h.cfg.Secrets == nil {
		return domain.E("create webhook", domain.Internal, "no secret key to seal webhook secrets with")
	}
	sealed, err := h.cfg.Secrets.Seal(id, secret)
	if err != nil {
		return err
	}
	res, err := execute(r, h.cfg.Store, webhookStream(id),
		domain.SubscribeWebhook{Account: acct, URL: *body.URL, Events: body.Events, SealedSecret: sealed})
	if err != nil {
		return err
	}
	h.cfg.Host.Wrote(r, res.LastSeq())
	e := res.Events[0]
	d := e.Data.(domain.WebhookSubscribed)
	respond.JSON(w, http.StatusCreated, wire.CreatedWebhook{
		ID: id, URL: d.URL, Events: d.Events, Secret: secret, CreatedAt: domain.FormatTime(e.OccurredAt),
	})
	return nil
}

func (h *Handler) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, err := h.cfg.DB.Webhooks(h.cfg.Host.Account(r))
	if err != nil {
		return err
	}
	out := make([]wire.Webhook, len(hooks))
	for i, hook := range hooks {
		out[i] = Render(hook)
	}
	respond.JSON(w, http.StatusOK, wire.Webhooks{Webhooks: out})
	return nil
}

// webhookVar is the caller's subscription named by the {id} path variable.
func (h *Handler) webhookVar(r *http.Request) (projections.Webhook, error) {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return projections.Webhook{}, errNotFound("webhook")
	}
	hook, ok, err := h.cfg.DB.Webhook(h.cfg.Host.Account(r), id)
	if err == nil && !ok {
		err = errNotFound("webhook")
	}
	return hook, err
}

func (h *Handler) getWebhook(w http.ResponseWriter, r *http.Request) error {
	hook, err := h.webhookVar(r)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, Render(hook))
	return nil
}

// listDeliveries is the deliveries log of a subscription: every attempt,
// newest first.
func (h *Handler) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	hook, err := h.webhookVar(r)
	if err != nil {
		return err
	}
	limit, err := h.cfg.Host.IntParam(r, "limit", 50, 1, 100)
	if err != nil {
		return err
	}
	offset, err := h.cfg.Host.IntParam(r, "offset", 0, 0, int(^uint(0)>>1))
	if err != nil {
		return err
	}
	ds, err := h.cfg.DB.Deliveries(hook.ID, limit, offset)
	if err != nil {
		return err
	}
	out := make([]wire.Delivery, len(ds))
	for i, d := range ds {
		j := wire.Delivery{DeliveryID: d.DeliveryID, EventID: d.EventID, Event: d.Kind, Attempt: d.Attempt,
			Succeeded: d.Succeeded, GaveUp: d.GaveUp, DurationMs: d.DurationMs, At: domain.FormatTime(d.At)}
		if d.VideoID != "" {
			j.VideoID = &d.VideoID
		}
		if d.StatusCode != 0 {
			j.StatusCode = &d.StatusCode
		}
		if d.Error != "" {
			j.Error = &d.Error
		}
		out[i] = j
	}
	respond.JSON(w, http.StatusOK, wire.Deliveries{Deliveries: out})
	return nil
}

// testWebhook queues a signed webhook.test delivery at once.
func (h *Handler) testWebhook(w http.ResponseWriter, r *http.Request) error {
	hook, err := h.webhookVar(r)
	if err != nil {
		return err
	}
	if h.cfg.Tester == nil {
		return domain.E("test webhook", domain.Unavailable, "webhook delivery is not running on this server")
	}
	if wait, ok := h.tests.allow(hook.ID, h.cfg.Now()); !ok {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return domain.E("test webhook", domain.RateLimited,
			"Too many test deliveries for this webhook: at most %d at once and then one every %d seconds; retry after %d seconds",
			testBurst, int(testEvery/time.Second), secs)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
	defer cancel()
	id, err := h.cfg.Tester.SendTest(ctx, hook)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusAccepted, wire.TestQueued{Message: "Test delivery queued; its attempts appear in GET /v1/webhooks/" + hook.ID + "/deliveries", DeliveryID: id})
	return nil
}

func (h *Handler) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("webhook")
	}
	res, err := execute(r, h.cfg.Store, webhookStream(id), domain.DeleteWebhook{Account: h.cfg.Host.Account(r)})
	if err != nil {
		return err
	}
	h.cfg.Host.Wrote(r, res.LastSeq())
	respond.JSON(w, http.StatusOK, wire.Message{Message: "Webhook deleted"})
	return nil
}

// POST /v1/webhooks/{id}/test is limited per subscription: testBurst at
// once, then one every testEvery (5 a minute). Each test is a delivery
// that waits its turn behind the subscription's others (one in flight per
// subscription), so without a limit a caller could queue thousands behind
// a receiver that never answers.
const (
	testBurst = 5
	testEvery = 12 * time.Second
)

// testLimiter is a token bucket per subscription, kept as the time its
// bucket will be full again (GCRA). It lives in the process, like the
// request limiter. The zero value is ready to use.
type testLimiter struct {
	mu   sync.Mutex
	full map[string]time.Time
}

// allow takes a token of subscription id at now, or reports how long until
// one is free.
func (l *testLimiter) allow(id string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.full == nil {
		l.full = make(map[string]time.Time)
	}
	full := l.full[id]
	if full.Before(now) {
		full = now
	}
	if over := full.Sub(now) - (testBurst-1)*testEvery; over > 0 {
		return over, false
	}
	if len(l.full) > 10000 {
		for k, t := range l.full {
			if t.Before(now) {
				delete(l.full, k)
			}
		}
	}
	l.full[id] = full.Add(testEvery)
	return 0, true
}

// redeliver sends a delivery that gave up once more, as a new delivery:
// 202 {"deliveryId": <new id>}. A delivery that succeeded, is still being
// retried, or was redelivered already is a 409; an unknown one (or one of
// another account's webhook) a 404.
func (h *Handler) redeliver(w http.ResponseWriter, r *http.Request) error {
	hook, err := h.webhookVar(r)
	if err != nil {
		return err
	}
	dlv := mux.Vars(r)["deliveryId"]
	if !wellFormedDeliveryID(dlv) {
		return errNotFound("delivery")
	}
	if h.cfg.Redeliver == nil {
		return domain.E("redeliver", domain.Unavailable, "webhook delivery is not running on this server")
	}
	// One decision at a time on this node: two requests for the same
	// delivery must not both pass the checks below. (Across nodes the
	// redelivery's fixed id keeps the queue to one message.)
	h.redeliveries.Lock()
	defer h.redeliveries.Unlock()
	attempts, err := h.cfg.DB.DeliveryAttempts(hook.ID, dlv)
	if err != nil {
		return err
	}
	if len(attempts) == 0 {
		return errNotFound("delivery")
	}
	gaveUp := false
	for _, a := range attempts {
		if a.Succeeded {
			return domain.E("redeliver", domain.Conflict, "delivery %s succeeded (attempt %d); there is nothing to send again", dlv, a.Attempt)
		}
		gaveUp = gaveUp || a.GaveUp
	}
	if !gaveUp {
		return domain.E("redeliver", domain.Conflict, "delivery %s is still being retried; only a delivery that gave up can be sent again", dlv)
	}
	if again, ok, err := h.cfg.DB.Redelivered(hook.ID, dlv); err != nil {
		return err
	} else if ok {
		return domain.E("redeliver", domain.Conflict, "delivery %s was sent again already, as %s", dlv, again.DeliveryID)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
	defer cancel()
	id, seq, err := h.cfg.Redeliver.Redeliver(ctx, hook, attempts[0])
	if err != nil {
		return err
	}
	h.cfg.Host.Wrote(r, seq)
	h.cfg.Host.Logger(r).Info("webhook delivery sent again", "webhook_id", hook.ID, "delivery_id", dlv, "redelivery_id", id)
	respond.JSON(w, http.StatusAccepted, struct {
		Message    string `json:"message"`
		DeliveryID string `json:"deliveryId"`
	}{"Delivery queued again; its attempts appear in GET /v1/webhooks/" + hook.ID + "/deliveries as " + id, id})
	return nil
}

// wellFormedDeliveryID: "dlv_" and lowercase hex digits.
func wellFormedDeliveryID(id string) bool {
	hex, ok := strings.CutPrefix(id, "dlv_")
	if !ok || len(hex) == 0 || len(hex) > 64 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
