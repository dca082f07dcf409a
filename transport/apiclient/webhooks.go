package apiclient

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kino-video/kino/transport/wire"
)

// CreateWebhook subscribes url (absolute http or https) to events
// (video.completed, video.failed). The answer holds the signing secret,
// shown only this once.
func (c *Client) CreateWebhook(ctx context.Context, url string, events ...EventType) (CreatedWebhook, error) {
	cl := c.api(http.MethodPost, "/webhooks", nil)
	cl.body, cl.contentType = jsonBody(struct {
		URL    string      `json:"url"`
		Events []EventType `json:"events"`
	}{url, events}), "application/json"
	var out wire.CreatedWebhook
	if err := c.do(ctx, cl, &out); err != nil {
		return CreatedWebhook{}, err
	}
	return CreatedWebhook{Webhook: Webhook{ID: out.ID, URL: out.URL, Events: eventTypes(out.Events), CreatedAt: parseTime(out.CreatedAt)},
		Secret: out.Secret}, nil
}

// Webhooks lists the account's subscriptions, oldest first.
func (c *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	var out wire.Webhooks
	if err := c.get(ctx, "/webhooks", nil, &out); err != nil {
		return nil, err
	}
	ws := make([]Webhook, len(out.Webhooks))
	for i, w := range out.Webhooks {
		ws[i] = webhookFrom(w)
	}
	return ws, nil
}

// Webhook reads one subscription.
func (c *Client) Webhook(ctx context.Context, id string) (Webhook, error) {
	var out wire.Webhook
	err := c.get(ctx, "/webhooks/"+url.PathEscape(id), nil, &out)
	return webhookFrom(out), err
}

// DeleteWebhook deletes a subscription: no further deliveries, retries
// included.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.do(ctx, c.api(http.MethodDelete, "/webhooks/"+url.PathEscape(id), nil), nil)
}

// TestWebhook queues a signed webhook.test delivery to the subscription
// and returns its delivery id (see Deliveries for how it went). The
// allowance is 5 at once, then one every 12 s (429 beyond).
func (c *Client) TestWebhook(ctx context.Context, id string) (deliveryID string, err error) {
	var out wire.TestQueued
	err = c.do(ctx, c.api(http.MethodPost, "/webhooks/"+url.PathEscape(id)+"/test", nil), &out)
	return out.DeliveryID, err
}

// PageOptions page a log; zero values are the server's defaults (50 from
// the newest).
type PageOptions struct {
	Limit  int // 1..100
	Offset int
}

func (o PageOptions) query() url.Values {
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Offset != 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	return q
}

// Deliveries is one page of a subscription's deliveries log, newest
// first: one entry per attempt.
func (c *Client) Deliveries(ctx context.Context, webhookID string, o PageOptions) ([]Delivery, error) {
	var out wire.Deliveries
	if err := c.get(ctx, "/webhooks/"+url.PathEscape(webhookID)+"/deliveries", o.query(), &out); err != nil {
		return nil, err
	}
	ds := make([]Delivery, len(out.Deliveries))
	for i, d := range out.Deliveries {
		ds[i] = deliveryFrom(d)
	}
	return ds, nil
}

// AllDeliveries iterates over a subscription's whole deliveries log,
// newest first, a page (o.Limit, default 100) at a time. Attempts made
// during the iteration shift the pages: an entry already yielded (the
// same DeliveryID and Attempt) is skipped when it shows up again. An
// error ends the iteration.
func (c *Client) AllDeliveries(ctx context.Context, webhookID string, o PageOptions) iter.Seq2[Delivery, error] {
	if o.Limit == 0 {
		o.Limit = 100
	}
	return func(yield func(Delivery, error) bool) {
		seen := map[string]bool{}
		for {
			page, err := c.Deliveries(ctx, webhookID, o)
			if err != nil {
				yield(Delivery{}, err)
				return
			}
			for _, d := range page {
				k := d.DeliveryID + "#" + strconv.Itoa(d.Attempt)
				if seen[k] {
					continue
				}
				seen[k] = true
				if !yield(d, nil) {
					return
				}
			}
			if len(page) < o.Limit {
				return
			}
			o.Offset += len(page)
		}
	}
}

// Redeliver sends a delivery that gave up once more, as a new delivery
// with a new id (returned). A delivery that has not given up (succeeded,
// or still retrying) is ErrConflict.
func (c *Client) Redeliver(ctx context.Context, webhookID, deliveryID string) (newDeliveryID string, err error) {
	var out struct {
		DeliveryID string `json:"deliveryId"`
	}
	err = c.do(ctx, c.api(http.MethodPost, "/webhooks/"+url.PathEscape(webhookID)+"/deliveries/"+url.PathEscape(deliveryID)+"/redeliver", nil), &out)
	return out.DeliveryID, err
}
