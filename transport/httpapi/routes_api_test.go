package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/kino-video/kino/domain"
)

// Every answer carries a request id; unknown routes and methods answer
// the API's errors.
func TestRoutingAnswersErrorsWithARequestID(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)
	for _, r := range []struct {
		method, path string
		status       int
		label        string
	}{
		{"GET", "/v1/nothing", 404, "Not found"},
		{"PUT", "/v1/videos", 405, "Method not allowed"},
	} {
		got := a.Do(r.method, r.path, key, nil)
		wantError(t, got, r.status, r.label)
		if got.Header.Get("X-Request-Id") == "" {
			t.Fatalf("%s %s: %d without X-Request-Id", r.method, r.path, got.Status)
		}
	}
	if r := a.Do("GET", "/v1/videos", key, nil); r.Header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
}

func TestOpenAPIDocumentIsServed(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	r := a.Do("GET", "/v1/openapi.json", "", nil)
	wantStatus(t, r, 200)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json: %v %s", err, r.Body[:min(200, len(r.Body))])
	}
	for _, p := range []string{"/videos", "/videos/{id}", "/videos/{id}/events", "/collections/{slug}", "/webhooks/{id}/deliveries", "/admin/replay"} {
		if doc.Paths[p] == nil {
			t.Errorf("the document lacks %s", p)
		}
	}
}
