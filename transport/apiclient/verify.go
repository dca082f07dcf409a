package apiclient

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/kino-video/kino/transport/wire"
)

// Headers of every webhook delivery (docs/webhooks.md).
const (
	HeaderSignature = "x-svc-signature" // lowercase hex HMAC-SHA256 of the raw body, keyed with the secret
	HeaderEvent     = "x-svc-event"     // the body's type
	HeaderDelivery  = "x-svc-delivery"  // the same on every attempt: dedupe on it
)

// MaxWebhookBody is the largest delivery body ReadWebhook reads.
const MaxWebhookBody = 1 << 20

// ErrSignature is a delivery whose x-svc-signature is missing or is not
// the body's signature with the secret: reject it (401).
var ErrSignature = errors.New("kino: webhook signature does not match")

// WebhookEvent is a verified delivery.
type WebhookEvent struct {
	ID         string    // the event's id; the same for every subscription
	Type       EventType // video.completed, video.failed, video.playable or webhook.test
	CreatedAt  time.Time // when the event happened; unchanged on retries
	DeliveryID string    // x-svc-delivery (ReadWebhook only): dedupe on it
	// Video is the video, as GET /v1/videos/{id} answered at the event,
	// for video.completed and video.failed.
	Video *Video
	// Webhook is the subscription a webhook.test is about.
	Webhook *TestWebhook
	// Track is the text track a video.captions.ready or
	// video.captions.failed is about.
	Track *CaptionTrack
	// Raw is the body as received.
	Raw []byte
}

// TestWebhook is the subscription a webhook.test delivery names.
type TestWebhook struct {
	ID     string
	URL    string
	Events []EventType
}

// VerifyWebhook checks that signature (the x-svc-signature header) is the
// HMAC-SHA256 of body keyed with secret (the whole whsec_... string),
// comparing in constant time, and then decodes the body. body must be the
// exact bytes received: JSON parsed and encoded again no longer matches.
//
// kino's signature covers the body only, with no timestamp, and retries
// send the same bytes for up to 11 hours: there is no freshness window to
// check. Against replays, remember the x-svc-delivery values handled
// (ReadWebhook returns it) and skip those seen before.
func VerifyWebhook(body []byte, signature, secret string) (WebhookEvent, error) {
	given, err := hex.DecodeString(signature)
	if err != nil || len(given) != sha256.Size || secret == "" {
		return WebhookEvent{}, ErrSignature
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(given, mac.Sum(nil)) {
		return WebhookEvent{}, ErrSignature
	}
	var b wire.WebhookBody
	if err := json.Unmarshal(body, &b); err != nil {
		return WebhookEvent{}, fmt.Errorf("kino: webhook body: %w", err)
	}
	e := WebhookEvent{ID: b.ID, Type: EventType(b.Type), CreatedAt: parseTime(b.CreatedAt), Raw: body}
	if b.Data.Video != nil {
		v := videoFrom(*b.Data.Video)
		e.Video = &v
	}
	e.Track = b.Data.Track
	if w := b.Data.Webhook; w != nil {
		e.Webhook = &TestWebhook{ID: w.ID, URL: w.URL, Events: eventTypes(w.Events)}
	}
	return e, nil
}

// ReadWebhook reads a delivery's body (at most MaxWebhookBody bytes) from
// r and verifies it with secret (VerifyWebhook). On ErrSignature answer
// 401; on success answer 2xx within 10 s (queue slow work).
func ReadWebhook(r *http.Request, secret string) (WebhookEvent, error) {
	if r.Method != http.MethodPost {
		return WebhookEvent{}, fmt.Errorf("kino: webhook deliveries are POSTs (got %s)", r.Method)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBody+1))
	if err != nil {
		return WebhookEvent{}, fmt.Errorf("kino: reading the webhook body: %w", err)
	}
	if len(body) > MaxWebhookBody {
		return WebhookEvent{}, fmt.Errorf("kino: webhook body over %d bytes", MaxWebhookBody)
	}
	e, err := VerifyWebhook(body, r.Header.Get(HeaderSignature), secret)
	if err != nil {
		return e, err
	}
	e.DeliveryID = r.Header.Get(HeaderDelivery)
	return e, nil
}

// WebhookHandler is a receiver: it verifies each delivery with secret
// (401 when the signature is wrong, 400 when the body is malformed) and
// calls handle, answering 204 when it returns nil and 500 otherwise (kino
// then retries). handle must be quick (kino waits 10 s) and should skip a
// DeliveryID it has already handled: deliveries are at least once.
func WebhookHandler(secret string, handle func(*http.Request, WebhookEvent) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := ReadWebhook(r, secret)
		switch {
		case errors.Is(err, ErrSignature):
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, "malformed delivery", http.StatusBadRequest)
			return
		}
		if err := handle(r, e); err != nil {
			http.Error(w, "not handled", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
