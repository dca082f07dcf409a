package domain_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kino-video/kino/domain"
)

// TestDecodeEveryFixture decodes testdata/events/<Type>.v<N>.json: a frozen
// copy of every event version ever written. Each registered type must have
// a fixture for each of its versions, and every fixture must decode (and
// upcast) — so a change that would break an existing stream fails here.
// Fixtures are never edited; a new version adds a file.
func TestDecodeEveryFixture(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			e, err := domain.Decode(raw)
			if err != nil {
				t.Fatalf("a stored event no longer decodes: %v", err)
			}
			if want := fmt.Sprintf("%s.v%d.json", e.Type, e.Version); filepath.Base(f) != want {
				t.Fatalf("fixture %s holds %s", filepath.Base(f), want)
			}
			if e.Data == nil || e.Data.EventType() != e.Type || e.OccurredAt.IsZero() || e.ID == "" {
				t.Fatalf("decoded %+v", e)
			}
			// The one-pass decoder agrees with the general one.
			fast, err := domain.DecodeAs(e.Type, raw)
			if err != nil || !reflect.DeepEqual(fast, e) {
				t.Fatalf("DecodeAs = %+v, %v; Decode = %+v", fast, err, e)
			}
			have[filepath.Base(f)] = true
		})
	}
	for typ, current := range domain.EventTypes() {
		for v := 1; v <= current; v++ {
			if name := fmt.Sprintf("%s.v%d.json", typ, v); !have[name] {
				t.Errorf("no fixture testdata/events/%s: freeze one for every version written", name)
			}
		}
	}
}

// DecodeAs must read every body as Decode does, or refuse it as Decode
// does, whatever is wrong with it: its one-pass decoder (json/v2) matches
// names exactly and leaves absent members empty, so it must hand anything
// not written by Encode to Decode.
func TestDecodeAsAgreesWithDecodeOnBodiesNotAsWritten(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "events", "UploadAccepted.v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]func(env, data map[string]any){
		"as written":              func(env, data map[string]any) {},
		"no occurredAt":           func(env, data map[string]any) { delete(env, "occurredAt") },
		"null occurredAt":         func(env, data map[string]any) { env["occurredAt"] = nil },
		"OccurredAt":              func(env, data map[string]any) { env["OccurredAt"] = env["occurredAt"]; delete(env, "occurredAt") },
		"aggregateID":             func(env, data map[string]any) { env["aggregateID"] = env["aggregateId"]; delete(env, "aggregateId") },
		"Account in data":         func(env, data map[string]any) { data["Account"] = data["account"]; delete(data, "account") },
		"no data":                 func(env, data map[string]any) { delete(env, "data") },
		"null data":               func(env, data map[string]any) { env["data"] = nil },
		"unknown member":          func(env, data map[string]any) { env["traceId"] = "x" },
		"unknown member in data":  func(env, data map[string]any) { data["codec"] = "h264" },
		"offset time":             func(env, data map[string]any) { env["occurredAt"] = "2026-01-02T05:04:05.006+02:00" },
		"time without fraction":   func(env, data map[string]any) { env["occurredAt"] = "2026-01-02T03:04:05Z" },
		"number as string":        func(env, data map[string]any) { data["originalSize"] = "12" },
		"occurredAt not a time":   func(env, data map[string]any) { env["occurredAt"] = "yesterday" },
		"empty filename (a zero)": func(env, data map[string]any) { data["filename"] = "" },
	}
	for name, change := range variants {
		t.Run(name, func(t *testing.T) {
			var env map[string]any
			if err := json.Unmarshal(raw, &env); err != nil {
				t.Fatal(err)
			}
			data, _ := env["data"].(map[string]any)
			change(env, data)
			body, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := domain.Decode(body)
			got, gotErr := domain.DecodeAs(domain.TypeUploadAccepted, body)
			if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("DecodeAs = %+v, %v\nDecode   = %+v, %v", got, gotErr, want, wantErr)
			}
		})
	}
}
