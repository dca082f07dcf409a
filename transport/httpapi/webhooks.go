package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/wire"
)

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

// Sealer seals a webhook's signing secret for its id before it is stored:
// neither the event stream nor the read models hold it in clear.
type Sealer interface {
	Seal(id, secret string) (string, error)
}

// createWebhook answers 201 with the signing secret: the only time it is
// shown.
func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		URL    *string  `json:"url"`
		Events []string `json:"events"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
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
	acct := callerOf(r).Account
	id := s.cfg.Store.NewID()
	if s.cfg.Secrets == nil {
		return domain.E("create webhook", domain.Internal, "no secret key to seal webhook secrets with")
	}
	sealed, err := s.cfg.Secrets.Seal(id, secret)
	if err != nil {
		return err
	}
	res, err := execute[domain.Webhook](r, s.cfg.Store, webhookStream(id),
		domain.SubscribeWebhook{Account: acct, URL: *body.URL, Events: body.Events, SealedSecret: sealed})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	e := res.Events[0]
	d := e.Data.(domain.WebhookSubscribed)
	respond.JSON(w, http.StatusCreated, wire.CreatedWebhook{
		ID: id, URL: d.URL, Events: d.Events, Secret: secret, CreatedAt: domain.FormatTime(e.OccurredAt),
	})
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	hooks, err := s.cfg.DB.Webhooks(callerOf(r).Account)
	if err != nil {
		return err
	}
	out := make([]wire.Webhook, len(hooks))
	for i, h := range hooks {
		out[i] = renderWebhook(h)
	}
	respond.JSON(w, http.StatusOK, wire.Webhooks{Webhooks: out})
	return nil
}

// webhookVar is the caller's subscription named by the {id} path variable.
func (s *Server) webhookVar(r *http.Request) (projections.Webhook, error) {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return projections.Webhook{}, errNotFound("webhook")
	}
	h, ok, err := s.cfg.DB.Webhook(callerOf(r).Account, id)
	if err == nil && !ok {
		err = errNotFound("webhook")
	}
	return h, err
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	h, err := s.webhookVar(r)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, renderWebhook(h))
	return nil
}

// listDeliveries is the deliveries log of a subscription: every attempt,
// newest first.
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	h, err := s.webhookVar(r)
	if err != nil {
		return err
	}
	limit, err := atoiParam(r, "limit", 50, 1, 100)
	if err != nil {
		return err
	}
	offset, err := atoiParam(r, "offset", 0, 0, int(^uint(0)>>1))
	if err != nil {
		return err
	}
	ds, err := s.cfg.DB.Deliveries(h.ID, limit, offset)
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
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request) error {
	h, err := s.webhookVar(r)
	if err != nil {
		return err
	}
	if s.cfg.Webhooks == nil {
		return domain.E("test webhook", domain.Unavailable, "webhook delivery is not running on this server")
	}
	if wait, ok := s.tests.allow(h.ID, s.cfg.Now()); !ok {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return domain.E("test webhook", domain.RateLimited,
			"Too many test deliveries for this webhook: at most %d at once and then one every %d seconds; retry after %d seconds",
			testBurst, int(testEvery/time.Second), secs)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
	defer cancel()
	id, err := s.cfg.Webhooks.SendTest(ctx, h)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusAccepted, wire.TestQueued{Message: "Test delivery queued; its attempts appear in GET /v1/webhooks/" + h.ID + "/deliveries", DeliveryID: id})
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("webhook")
	}
	res, err := execute[domain.Webhook](r, s.cfg.Store, webhookStream(id), domain.DeleteWebhook{Account: callerOf(r).Account})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
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
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) error {
	h, err := s.webhookVar(r)
	if err != nil {
		return err
	}
	dlv := mux.Vars(r)["deliveryId"]
	if !wellFormedDeliveryID(dlv) {
		return errNotFound("delivery")
	}
	if s.cfg.Redeliver == nil {
		return domain.E("redeliver", domain.Unavailable, "webhook delivery is not running on this server")
	}
	// One decision at a time on this node: two requests for the same
	// delivery must not both pass the checks below. (Across nodes the
	// redelivery's fixed id keeps the queue to one message.)
	s.redeliveries.Lock()
	defer s.redeliveries.Unlock()
	attempts, err := s.cfg.DB.DeliveryAttempts(h.ID, dlv)
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
	if again, ok, err := s.cfg.DB.Redelivered(h.ID, dlv); err != nil {
		return err
	} else if ok {
		return domain.E("redeliver", domain.Conflict, "delivery %s was sent again already, as %s", dlv, again.DeliveryID)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
	defer cancel()
	id, seq, err := s.cfg.Redeliver.Redeliver(ctx, h, attempts[0])
	if err != nil {
		return err
	}
	s.settle(r, seq)
	logger(r, s.cfg.Log).Info("webhook delivery sent again", "webhook_id", h.ID, "delivery_id", dlv, "redelivery_id", id)
	respond.JSON(w, http.StatusAccepted, struct {
		Message    string `json:"message"`
		DeliveryID string `json:"deliveryId"`
	}{"Delivery queued again; its attempts appear in GET /v1/webhooks/" + h.ID + "/deliveries as " + id, id})
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
