package asr_test

import (
	"os"
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
