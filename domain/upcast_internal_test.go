package domain

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleV2 stands for an event whose schema changed: v1 had "name", v2
// splits it into "first" and "last".
type exampleV2 struct {
	First string `json:"first"`
	Last  string `json:"last"`
}

func (exampleV2) EventType() string { return "ExampleRenamed" }
func (exampleV2) Aggregate() string { return AggAccount }

func TestDecodeUpcastsOldVersions(t *testing.T) {
	registry["ExampleRenamed"] = eventSpec{version: 2, decode: decodeAs[exampleV2], upcasters: map[int]func(json.RawMessage) (json.RawMessage, error){
		1: func(raw json.RawMessage) (json.RawMessage, error) {
			var v1 struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(raw, &v1); err != nil {
				return nil, err
			}
			first, last, _ := strings.Cut(v1.Name, " ")
			return json.Marshal(exampleV2{First: first, Last: last})
		},
	}}
	t.Cleanup(func() { delete(registry, "ExampleRenamed") })

	v1 := `{"id":"01JFIXTURE0000000000000001","type":"ExampleRenamed","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"name":"Ada Lovelace"}}`
	e, err := Decode([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Data.(exampleV2); got.First != "Ada" || got.Last != "Lovelace" || e.Version != 1 {
		t.Fatalf("upcast %+v (version %d)", got, e.Version)
	}
	// Encoding writes the current version.
	raw, err := Encode(e)
	if err != nil || !strings.Contains(string(raw), `"version":2`) || !strings.Contains(string(raw), `"first":"Ada"`) {
		t.Fatalf("encode %s %v", raw, err)
	}
	// A version without its upcaster is an error, never a silent zero value.
	spec := registry["ExampleRenamed"]
	spec.version = 3
	registry["ExampleRenamed"] = spec
	if _, err := Decode([]byte(v1)); err == nil || !strings.Contains(err.Error(), "no upcaster") {
		t.Fatalf("missing upcaster: %v", err)
	}
}

// TestOnePassDecoderReadsEveryCurrentFixture: DecodeAs falls back to
// Decode when the one-pass decoder refuses an event, so agreeing with
// Decode is not enough; the fast path must really take every event kino
// writes at its current version.
func TestOnePassDecoderReadsEveryCurrentFixture(t *testing.T) {
	for typ, spec := range registry {
		raw, err := os.ReadFile(filepath.Join("testdata", "events", fmt.Sprintf("%s.v%d.json", typ, spec.version)))
		if err != nil {
			t.Fatal(err)
		}
		e, err := spec.current(raw)
		if err != nil || e.Type != typ || e.Version != spec.version || e.Data.EventType() != typ {
			t.Errorf("%s: one-pass decoding gave %+v, %v", typ, e, err)
		}
	}
}
