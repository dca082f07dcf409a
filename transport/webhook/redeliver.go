package webhook

import (
	"context"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/wire"
)

// Redeliverer sends a delivery that gave up once more
// (POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver): the same
// body, rebuilt from the event stream as the fan-out built it, queued as a
// new delivery through the same queue, so it is signed, sent one at a time
// per subscription and retried like any other, and its attempts appear in
// the deliveries log under the new id.
type Redeliverer struct {
	Store  Store
	Queue  Enqueuer
	CDNURL string // the API's --cdn-url, as the fan-out has it
}

// RedeliveryID is the id of the redelivery of delivery deliveryID of
// webhook hookID. It is fixed, so two requests racing on two API nodes
// queue one delivery (the queue drops the second message by its id).
func RedeliveryID(deliveryID, hookID string) string {
	return DeliveryID("redeliver:"+deliveryID, hookID)
}

// Redeliver queues again the delivery whose first attempt is first, to w,
// and records DeliveryRedelivered. It returns the new delivery's id and
// the event's stream sequence.
func (r Redeliverer) Redeliver(ctx context.Context, w projections.Webhook, first projections.Delivery) (string, uint64, error) {
	body, err := r.body(ctx, w, first)
	if err != nil {
		return "", 0, err
	}
	id := RedeliveryID(first.DeliveryID, w.ID)
	if err := enqueue(ctx, r.Queue, w.ID, w.Account, body, first.VideoID, id, id); err != nil {
		return "", 0, err
	}
	events, err := r.Store.Record(ctx, domain.WebhookStream(w.ID), domain.DeliveryRedelivered{
		Account: w.Account, DeliveryID: id, RedeliveryOf: first.DeliveryID, EventID: body.ID, Kind: body.Type, VideoID: first.VideoID,
	})
	if err != nil {
		return "", 0, err
	}
	return id, events[0].Seq, nil
}

// body rebuilds what the first delivery sent: for a video event, the video
// as it stood at that event (as the fan-out renders it); for a test, the
// subscription with the test's id and time.
func (r Redeliverer) body(ctx context.Context, w projections.Webhook, first projections.Delivery) (Body, error) {
	const op = "redeliver"
	if first.Kind == domain.EventWebhookTest {
		return testBody(w, first.EventID, first.At), nil
	}
	gone := domain.E(op, domain.Conflict, "the video event of delivery %s is no longer in the event stream; it cannot be sent again", first.DeliveryID)
	if !domain.ValidID(first.VideoID) {
		return Body{}, gone
	}
	events, _, err := r.Store.Load(ctx, domain.VideoStream(first.VideoID))
	if err != nil {
		return Body{}, err
	}
	for _, e := range events {
		if e.ID != first.EventID {
			continue
		}
		v, _, ok, err := videoAt(ctx, r.Store, e, r.CDNURL)
		if err != nil {
			return Body{}, err
		}
		if !ok {
			return Body{}, gone
		}
		return Body{ID: e.ID, Type: first.Kind, CreatedAt: domain.FormatTime(e.OccurredAt), Data: wire.WebhookData{Video: &v}}, nil
	}
	return Body{}, gone
}
