package httpapi_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)
	r := a.Do("POST", "/v1/webhooks", key, map[string]any{"url": "https://example.com/hook", "events": []string{"video.failed", "video.completed", "video.failed"}})
	wantStatus(t, r, 201)
	created := r.JSON(t)
	id, _ := created["id"].(string)
	secret, _ := created["secret"].(string)
	if !domain.ValidID(id) || !strings.HasPrefix(secret, "whsec_") || len(secret) < 38 || created["url"] != "https://example.com/hook" {
		t.Fatalf("created: %s", r.Body)
	}
	if ev := created["events"].([]any); len(ev) != 2 || ev[0] != "video.completed" || ev[1] != "video.failed" {
		t.Fatalf("events %v", ev)
	}
	checkTimestamp(t, "createdAt", created["createdAt"])

	got := a.Do("GET", "/v1/webhooks/"+id, key, nil)
	wantStatus(t, got, 200)
	if _, ok := got.JSON(t)["secret"]; ok || bytes.Contains(got.Body, []byte(secret)) {
		t.Fatalf("secret shown after creation: %s", got.Body)
	}
	list := a.Do("GET", "/v1/webhooks", key, nil)
	wantStatus(t, list, 200)
	if bytes.Contains(list.Body, []byte(secret)) || !bytes.Contains(list.Body, []byte(id)) {
		t.Fatalf("list: %s", list.Body)
	}

	for _, tt := range []struct {
		name string
		body any
	}{
		{"no url", map[string]any{"events": []string{"video.completed"}}},
		{"relative url", map[string]any{"url": "/hook", "events": []string{"video.completed"}}},
		{"ftp url", map[string]any{"url": "ftp://example.com/", "events": []string{"video.completed"}}},
		{"credentials in url", map[string]any{"url": "https://u:p@example.com/", "events": []string{"video.completed"}}},
		{"no events", map[string]any{"url": "https://example.com/"}},
		{"empty events", map[string]any{"url": "https://example.com/", "events": []string{}}},
		{"unknown event", map[string]any{"url": "https://example.com/", "events": []string{"video.removed"}}},
		{"events not a list", map[string]any{"url": "https://example.com/", "events": "video.completed"}},
		{"url not a string", map[string]any{"url": 5, "events": []string{"video.completed"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, a.Do("POST", "/v1/webhooks", key, tt.body), 400, "Bad request")
		})
	}

	wantStatus(t, a.Do("DELETE", "/v1/webhooks/"+id, key, nil), 200)
	wantError(t, a.Do("GET", "/v1/webhooks/"+id, key, nil), 404, "Not found")
	wantError(t, a.Do("DELETE", "/v1/webhooks/"+id, key, nil), 404, "Not found")
	wantError(t, a.Do("GET", "/v1/webhooks/x.y", key, nil), 404, "Not found")
}
