package domain_test

import (
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
