package webhook

import (
	"context"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
)

// A redelivery sends the body the fan-out sent, byte for byte the same
// resource (the video as of its event, even once deleted), as a new
// delivery sent and recorded like any other, and records the
// DeliveryRedelivered event. Asking twice queues it once.
func TestRedeliverSendsTheSameBodyAsANewDelivery(t *testing.T) {
	env := newFanoutEnv(t)
	ctx := context.Background()
	do[domain.Collection](t, env.serve, domain.CollectionStream("acme", "main"), domain.CreateCollection{Account: "acme", Slug: "main", Name: "Main"})
	hook := env.subscribe(t, "acme", "/all", domain.EventVideoCompleted)
	env.createFanoutConsumer(t)
	v := env.upload(t, "acme", "clip.mp4")
	done := env.complete(t, v)
	env.deliverAll(t, done.Seq)
	do[domain.Video](t, env.serve, v, domain.DeleteVideo{Account: "acme"})

	first := projections.Delivery{WebhookID: hook, DeliveryID: DeliveryID(done.ID, hook), EventID: done.ID,
		Kind: domain.EventVideoCompleted, VideoID: v.ID, Attempt: 1}
	w := projections.Webhook{ID: hook, Account: "acme", URL: env.rc.srv.URL + "/all", Events: []string{domain.EventVideoCompleted}}
	r := Redeliverer{Store: env.serve, Queue: queue.New(env.serve), CDNURL: testCDN}
	id, seq, err := r.Redeliver(ctx, w, first)
	if err != nil {
		t.Fatal(err)
	}
	if id == first.DeliveryID || !validDeliveryID(id) || seq == 0 {
		t.Fatalf("redelivery id %q seq %d", id, seq)
	}
	// A second request (another node racing) queues nothing more.
	if again, _, err := r.Redeliver(ctx, w, first); err != nil || again != id {
		t.Fatalf("second redelivery: %q %v", again, err)
	}
	env.deliverAll(t, done.Seq)

	got := env.rc.bodies("/all")
	if len(got) != 2 || !sameJSON(t, got[0], got[1]) {
		t.Fatalf("bodies: %s", mustJSON(t, got))
	}
	var sent []outcome
	for _, o := range recorded(t, env.serve, hook) {
		if o.delivery == id {
			sent = append(sent, o)
		}
	}
	if len(sent) != 1 || !sent[0].ok || sent[0].attempt != 1 {
		t.Fatalf("attempts of the redelivery: %+v", sent)
	}
	n := 0
	err = env.serve.Scan(ctx, []string{domain.TypeFilter(domain.AggWebhook, domain.TypeDeliveryRedelivered)}, func(e domain.Event) error {
		d := e.Data.(domain.DeliveryRedelivered)
		if d.DeliveryID != id || d.RedeliveryOf != first.DeliveryID || d.EventID != done.ID || d.VideoID != v.ID || d.Account != "acme" {
			t.Errorf("event %+v", d)
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("%d DeliveryRedelivered, %v", n, err)
	}

	// An event no longer in the stream cannot be sent again.
	first.EventID = env.serve.NewID()
	if _, _, err := r.Redeliver(ctx, w, first); !domain.IsKind(err, domain.Conflict) {
		t.Fatalf("unknown event: %v", err)
	}
}
