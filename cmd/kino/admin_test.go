package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// The operator's endpoints, GET /v1/account and redelivery through a real
// kino serve, every exchange checked against docs/openapi.yaml (harness).
func TestAdminAccountAndRedeliverEndToEnd(t *testing.T) {
	t.Parallel()
	const token = "operator-secret-0123456789abcdef"
	h := start(t, t.TempDir(), withWebhooks, func(c *Config) { c.AdminToken = token })

	wantStatus(t, h.do("POST", "/v1/admin/accounts", token, map[string]string{"slug": "acme", "plan": "pro"}), 201)
	wantError(t, h.do("POST", "/v1/admin/accounts", token, map[string]string{"slug": "acme"}), 409, "Conflict")
	r := h.do("POST", "/v1/admin/accounts/acme/keys", token, map[string]string{"label": "ci"})
	wantStatus(t, r, 201)
	created := r.json(t)
	key, keyID := created["key"].(string), created["id"].(string)

	r = h.do("GET", "/v1/account", key, nil)
	wantStatus(t, r, 200)
	if m := r.json(t); m["slug"] != "acme" || m["plan"] != "pro" {
		t.Fatalf("account %s", r.body)
	}
	wantStatus(t, h.do("PATCH", "/v1/admin/accounts/acme", token, map[string]string{"plan": "business"}), 200)
	wantStatus(t, h.do("GET", "/v1/admin/accounts/acme", token, nil), 200)
	r = h.do("GET", "/v1/admin/accounts", token, nil)
	wantStatus(t, r, 200)
	if !strings.Contains(string(r.body), `"plan":"business"`) {
		t.Fatalf("accounts %s", r.body)
	}
	r = h.do("GET", "/v1/admin/accounts/acme/keys", token, nil)
	wantStatus(t, r, 200)
	if strings.Contains(string(r.body), key) || !strings.Contains(string(r.body), keyID) {
		t.Fatalf("keys %s", r.body)
	}

	// kino serve's own heartbeat shows in the health.
	eventstoretest.EventuallyEvery(t, "kino serve's heartbeat in the health", 20*time.Millisecond, func() (bool, string) {
		r = h.do("GET", "/v1/admin/health", token, nil)
		wantStatus(t, r, 200)
		return strings.Contains(string(r.body), `"role":"serve"`), string(r.body)
	})
	if m := r.json(t); m["status"] != "ok" {
		t.Fatalf("health %s", r.body)
	}

	// A delivery that gave up is sent again once the receiver works.
	rc := newReceiver(t, 500, 500, 500)
	hook, secret := h.subscribe(key, rc.srv.URL, "video.completed")
	r = h.do("POST", "/v1/webhooks/"+hook+"/test", key, nil)
	wantStatus(t, r, 202)
	first := r.json(t)["deliveryId"].(string)
	for range 3 {
		rc.next(t)
	}
	h.waitLogged(key, hook, 3)
	h.waitDeliveriesDone()
	r = h.do("POST", "/v1/webhooks/"+hook+"/deliveries/"+first+"/redeliver", key, nil)
	wantStatus(t, r, 202)
	again := r.json(t)["deliveryId"].(string)
	d := rc.next(t)
	if m := verify(t, d, secret); m["type"] != "webhook.test" || d.header.Get("x-svc-delivery") != again || again == first {
		t.Fatalf("redelivery %v as %s (first %s)", m, d.header.Get("x-svc-delivery"), first)
	}
	h.waitLogged(key, hook, 4)
	wantError(t, h.do("POST", "/v1/webhooks/"+hook+"/deliveries/"+first+"/redeliver", key, nil), 409, "Conflict")

	wantStatus(t, h.do("DELETE", "/v1/admin/accounts/acme/keys/"+keyID, token, nil), 204)
	wantError(t, h.do("GET", "/v1/account", key, nil), 401, "Invalid API key")
	_ = domain.PlanPro
}
