package asr_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/asr/asrtest"
)

// pocketsphinx is the engine with Debian's model: skipped without it on a
// workstation, a failure under CI.
func pocketsphinx(t testing.TB, cfg asr.PocketsphinxConfig) *asr.Pocketsphinx {
	t.Helper()
	e, err := asr.NewPocketsphinx(cfg)
	if err != nil {
		msg := "needs pocketsphinx's model: apt-get install pocketsphinx-en-us libpocketsphinx3 (" + err.Error() + ")"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return e
}

func TestPocketsphinx(t *testing.T) {
	asrtest.Run(t, pocketsphinx(t, asr.PocketsphinxConfig{ScratchDir: t.TempDir()}))
}

// TestModelPathsEscaped: model paths holding the filter graph's special
// characters reach pocketsphinx intact (a wrong path fails the run; here
// silence is found to hold no speech).
func TestModelPathsEscaped(t *testing.T) {
	pocketsphinx(t, asr.PocketsphinxConfig{})
	dir := filepath.Join(t.TempDir(), `a:b,c'd[e]f;g\h=i j`)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var cfg asr.PocketsphinxConfig
	for _, m := range []struct {
		path *string
		to   string
	}{{&cfg.Model, asr.DefaultModel}, {&cfg.Dict, asr.DefaultDict}, {&cfg.LM, asr.DefaultLM}} {
		*m.path = filepath.Join(dir, filepath.Base(m.to))
		if err := os.Symlink(m.to, *m.path); err != nil {
			t.Fatal(err)
		}
	}
	cfg.ScratchDir = dir
	e := pocketsphinx(t, cfg)
	if _, err := e.Transcribe(context.Background(), asrtest.Silence(t, t.TempDir(), 1), "en"); !errors.Is(err, asr.ErrNoSpeech) {
		t.Fatalf("err = %v, want ErrNoSpeech", err)
	}
}
