package domain

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Webhook subscription event types.
const (
	TypeWebhookSubscribed   = "WebhookSubscribed"
	TypeWebhookDeleted      = "WebhookDeleted"
	TypeDeliverySucceeded   = "DeliverySucceeded"
	TypeDeliveryFailed      = "DeliveryFailed"
	TypeDeliveryRedelivered = "DeliveryRedelivered"
)

// Subscribable event kinds (spec §6), and the kind of test deliveries.
const (
	EventVideoCompleted = "video.completed"
	EventVideoFailed    = "video.failed"
	EventWebhookTest    = "webhook.test"
	// EventVideoPlayable is kino's addition to the contract's two kinds:
	// the video plays (from a growing playlist) while still PROCESSING.
	// Sent once per processing run, always before video.completed.
	EventVideoPlayable = "video.playable"
	// The video's life around processing, kino's additions too: its upload
	// was accepted, its details or policy changed, it was deleted.
	EventVideoCreated = "video.created"
	EventVideoUpdated = "video.updated"
	EventVideoDeleted = "video.deleted"
	// A text track of the video is READY (uploaded, or generated) or
	// FAILED (its generation): one delivery per track.
	EventVideoCaptionsReady  = "video.captions.ready"
	EventVideoCaptionsFailed = "video.captions.failed"
)

// EventKinds are the subscribable kinds, in the order the docs list them.
var EventKinds = []string{EventVideoCreated, EventVideoPlayable, EventVideoCompleted, EventVideoFailed, EventVideoUpdated, EventVideoDeleted,
	EventVideoCaptionsReady, EventVideoCaptionsFailed}

// WebhookSubscribed holds the signing secret sealed with the server's
// secret key (v2): the stream never holds it in clear. Deliveries open it
// to sign. Audit views must never show either field.
//
// v1 wrote the secret in clear ("secret"); such events stay in the stream
// (it is append-only) and are read with Secret set and SealedSecret empty.
type WebhookSubscribed struct {
	Account      string   `json:"account"`
	URL          string   `json:"url"`
	Events       []string `json:"events"`
	SealedSecret string   `json:"sealedSecret,omitempty"` // v2
	Secret       string   `json:"secret,omitempty"`       // v1 only: the secret in clear
}

// upcastWebhookSubscribedV1 reads a v1 body as v2: its clear secret stays
// in Secret (the domain has no key to seal it with); SealedSecret is empty.
func upcastWebhookSubscribedV1(raw json.RawMessage) (json.RawMessage, error) { return raw, nil }

type WebhookDeleted struct {
	Account string `json:"account"`
}

// DeliverySucceeded: one attempt of a delivery got a 2xx in time.
type DeliverySucceeded struct {
	Account    string `json:"account"`
	DeliveryID string `json:"deliveryId"` // stable across attempts (x-svc-delivery)
	EventID    string `json:"eventId"`    // the body's id
	Kind       string `json:"kind"`       // video.completed, video.failed, webhook.test
	VideoID    string `json:"videoId,omitempty"`
	Attempt    int    `json:"attempt"`
	StatusCode int    `json:"statusCode"`
	DurationMs int64  `json:"durationMs"`
}

// DeliveryFailed: one attempt failed (StatusCode 0 when no response came;
// Error says why). GaveUp marks the last attempt: no retry follows.
type DeliveryFailed struct {
	Account    string `json:"account"`
	DeliveryID string `json:"deliveryId"`
	EventID    string `json:"eventId"`
	Kind       string `json:"kind"`
	VideoID    string `json:"videoId,omitempty"`
	Attempt    int    `json:"attempt"`
	StatusCode int    `json:"statusCode,omitempty"`
	Error      string `json:"error"`
	DurationMs int64  `json:"durationMs"`
	GaveUp     bool   `json:"gaveUp"`
}

// DeliveryRedelivered: the account asked to send a delivery that gave up
// once more (POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver).
// The same body (same event id) is queued again as a new delivery,
// DeliveryID, whose attempts are recorded like any other's.
type DeliveryRedelivered struct {
	Account      string `json:"account"`
	DeliveryID   string `json:"deliveryId"`   // the new delivery
	RedeliveryOf string `json:"redeliveryOf"` // the delivery that gave up
	EventID      string `json:"eventId"`
	Kind         string `json:"kind"`
	VideoID      string `json:"videoId,omitempty"`
}

func (DeliveryRedelivered) EventType() string { return TypeDeliveryRedelivered }
func (DeliveryRedelivered) Aggregate() string { return AggWebhook }

func (DeliverySucceeded) EventType() string { return TypeDeliverySucceeded }
func (DeliverySucceeded) Aggregate() string { return AggWebhook }
func (DeliveryFailed) EventType() string    { return TypeDeliveryFailed }
func (DeliveryFailed) Aggregate() string    { return AggWebhook }

func (WebhookSubscribed) EventType() string { return TypeWebhookSubscribed }
func (WebhookSubscribed) Aggregate() string { return AggWebhook }
func (WebhookDeleted) EventType() string    { return TypeWebhookDeleted }
func (WebhookDeleted) Aggregate() string    { return AggWebhook }

// Webhook is the write-side state of one subscription.
type Webhook struct {
	ID, Account, URL string
	SealedSecret     string // sealed signing secret (v2 subscriptions)
	Secret           string // clear signing secret of a v1 subscription
	Events           []string
	Created, Deleted bool
}

// DecisionTypes are the only events a subscription's decisions depend on;
// each occurs at most once. Its stream also holds one event per delivery
// attempt, which loading would otherwise read every time.
func (Webhook) DecisionTypes() []string {
	return []string{TypeWebhookSubscribed, TypeWebhookDeleted}
}

// Wants reports whether the live subscription takes deliveries of kind.
func (w Webhook) Wants(kind string) bool {
	return w.Created && !w.Deleted && (kind == EventWebhookTest || slices.Contains(w.Events, kind))
}

func (w Webhook) Evolve(e Event) Webhook {
	switch d := e.Data.(type) {
	case WebhookSubscribed:
		w = Webhook{ID: e.AggregateID, Account: d.Account, URL: d.URL, SealedSecret: d.SealedSecret, Secret: d.Secret, Events: d.Events, Created: true}
	case WebhookDeleted:
		w.Deleted = true
	}
	return w
}

// Exists reports whether the subscription is visible to account.
func (w Webhook) Exists(account string) bool {
	return w.Created && !w.Deleted && w.Account == account
}

// SubscribeWebhook carries the signing secret already sealed (for the new
// webhook's id) by the edge, which holds the key.
type SubscribeWebhook struct {
	Account, URL, SealedSecret string
	Events                     []string
}

type DeleteWebhook struct{ Account string }

// MaxURLLen bounds webhook URLs.
const MaxURLLen = 2048

// CheckWebhookURL validates a receiver address: absolute http(s) with a host.
func CheckWebhookURL(op, raw string) error {
	if raw == "" {
		return E(op, Invalid, "url is required")
	}
	if len(raw) > MaxURLLen {
		return E(op, Invalid, "url must be at most %d characters", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return E(op, Invalid, "url must be an absolute http or https URL (got %q)", Truncate(raw, 80))
	}
	if u.User != nil {
		return E(op, Invalid, "url must not carry credentials")
	}
	return nil
}

// NormalizeEvents checks a subscription's event kinds: a non-empty subset of
// the subscribable kinds; duplicates are dropped and the order made stable.
func NormalizeEvents(op string, events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, E(op, Invalid, "events must list at least one of %s", strings.Join(EventKinds, ", "))
	}
	var out []string
	for _, e := range events {
		if !slices.Contains(EventKinds, e) {
			return nil, E(op, Invalid, "unknown event %q; events must be among %s", Truncate(e, 40), strings.Join(EventKinds, ", "))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (w Webhook) Decide(cmd any, _ time.Time) ([]Payload, error) {
	switch c := cmd.(type) {
	case SubscribeWebhook:
		const op = "create webhook"
		if w.Created {
			return nil, E(op, Conflict, "webhook already exists")
		}
		if err := CheckWebhookURL(op, strings.TrimSpace(c.URL)); err != nil {
			return nil, err
		}
		events, err := NormalizeEvents(op, c.Events)
		if err != nil {
			return nil, err
		}
		if c.SealedSecret == "" {
			return nil, E(op, Internal, "the signing secret must be sealed")
		}
		return []Payload{WebhookSubscribed{Account: c.Account, URL: strings.TrimSpace(c.URL), Events: events, SealedSecret: c.SealedSecret}}, nil
	case DeleteWebhook:
		if !w.Exists(c.Account) {
			return nil, E("delete webhook", NotFound, "webhook not found")
		}
		return []Payload{WebhookDeleted{Account: c.Account}}, nil
	}
	return nil, E("decide webhook", Internal, "unknown command %T", cmd)
}
