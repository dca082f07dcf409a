package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestCollections(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)

	r := a.Do("POST", "/v1/collections", key, `{"slug":"news","name":"  News  ","color":"red"}`) // unknown fields ignored
	wantStatus(t, r, 201)
	c := r.JSON(t)
	if c["slug"] != "news" || c["name"] != "News" || c["videoCount"] != float64(0) {
		t.Fatalf("created %s", r.Body)
	}
	checkTimestamp(t, "createdAt", c["createdAt"])

	for _, tt := range []struct {
		name, body string
		status     int
		label      string
	}{
		{"duplicate", `{"slug":"news","name":"Again"}`, 409, "Conflict"},
		{"uppercase slug", `{"slug":"News","name":"x"}`, 400, "Bad request"},
		{"leading dash", `{"slug":"-news","name":"x"}`, 400, "Bad request"},
		{"64 characters", `{"slug":"` + strings.Repeat("a", 64) + `","name":"x"}`, 400, "Bad request"},
		{"dot in slug", `{"slug":"a.b","name":"x"}`, 400, "Bad request"},
		{"wildcard in slug", `{"slug":"a*","name":"x"}`, 400, "Bad request"},
		{"missing slug", `{"name":"x"}`, 400, "Bad request"},
		{"missing name", `{"slug":"x"}`, 400, "Bad request"},
		{"empty name", `{"slug":"x","name":"  "}`, 400, "Bad request"},
		{"slug not a string", `{"slug":42,"name":"x"}`, 400, "Bad request"},
		{"name not a string", `{"slug":"x","name":["x"]}`, 400, "Bad request"},
		{"malformed JSON", `{"slug":"x",`, 400, "Bad request"},
		{"not an object", `[1,2]`, 400, "Bad request"},
		{"empty body", ``, 400, "Bad request"},
		{"two objects", `{"slug":"x","name":"x"}{}`, 400, "Bad request"},
		{"body too large", `{"slug":"x","name":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "Request too large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, a.Do("POST", "/v1/collections", key, tt.body), tt.status, tt.label)
		})
	}
	if r := a.Do("POST", "/v1/collections", key, `{"slug":42,"name":"x"}`); !strings.Contains(string(r.Body), "slug") {
		t.Fatalf("type error does not name the field: %s", r.Body)
	}

	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "arts", "name": "Arts"}), 201)
	r = a.Do("GET", "/v1/collections", key, nil)
	wantStatus(t, r, 200)
	var list struct {
		Collections []map[string]any `json:"collections"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Collections) != 2 || list.Collections[0]["slug"] != "arts" {
		t.Fatalf("list: %s", r.Body)
	}

	// Rename: the collection and its videos' records follow.
	up := a.Upload(key, "news", "a.mp4", clip(t))
	wantStatus(t, up, 202)
	vid := up.JSON(t)["video"].(map[string]any)["id"].(string)
	r = a.Do("PATCH", "/v1/collections/news", key, map[string]string{"name": "World News"})
	wantStatus(t, r, 200)
	if r.JSON(t)["name"] != "World News" || r.JSON(t)["videoCount"] != float64(1) {
		t.Fatalf("rename: %s", r.Body)
	}
	if c := a.Do("GET", "/v1/videos/"+vid, key, nil).JSON(t)["collection"].(map[string]any); c["name"] != "World News" {
		t.Fatalf("video collection after rename: %v", c)
	}

	// Not empty: 409; emptied: deleted; then gone.
	wantError(t, a.Do("DELETE", "/v1/collections/news", key, nil), 409, "Conflict")
	wantStatus(t, a.Do("DELETE", "/v1/videos/"+vid, key, nil), 200)
	wantStatus(t, a.Do("DELETE", "/v1/collections/news", key, nil), 200)
	wantError(t, a.Do("GET", "/v1/collections/news", key, nil), 404, "Not found")
	wantError(t, a.Do("DELETE", "/v1/collections/news", key, nil), 404, "Not found")
	wantError(t, a.Do("GET", "/v1/collections/NOT_A_SLUG", key, nil), 404, "Not found")
	// The slug can be used again.
	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "news", "name": "News 2"}), 201)
}
