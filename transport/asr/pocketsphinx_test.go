package asr_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/asr/asrtest"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
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
	t.Parallel()
	asrtest.Run(t, pocketsphinx(t, asr.PocketsphinxConfig{ScratchDir: t.TempDir()}))
}

// TestModelPathsEscaped: model paths holding the filter graph's special
// characters reach pocketsphinx intact (a wrong path fails the run; here
// silence is found to hold no speech).
func TestModelPathsEscaped(t *testing.T) {
	t.Parallel()
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

// TestNewPocketsphinxRefuses a configuration that would fail every run.
func TestNewPocketsphinxRefuses(t *testing.T) {
	tests := []struct {
		name string
		cfg  asr.PocketsphinxConfig
	}{
		{"missing model", asr.PocketsphinxConfig{Model: "/nonexistent/en-us"}},
		{"missing dictionary", asr.PocketsphinxConfig{Dict: "/nonexistent/en.dict"}},
		{"pause level of no unit", asr.PocketsphinxConfig{PauseLevel: "-40dBFS"}},
		{"pause level of another option", asr.PocketsphinxConfig{PauseLevel: "1:mono=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := asr.NewPocketsphinx(tt.cfg); err == nil {
				t.Fatalf("NewPocketsphinx(%+v) = %v, want an error", tt.cfg, e)
			}
		})
	}
}

// TestAudioPastTheVideo: speech after the end of the video (here, a
// second of video and speech from the fourth second) is not read, as the
// transcoder does not read it either.
func TestAudioPastTheVideo(t *testing.T) {
	t.Parallel()
	e := pocketsphinx(t, asr.PocketsphinxConfig{ScratchDir: t.TempDir()})
	dir := t.TempDir()
	c := asrtest.Speech(t, dir, "speech.mp4", asrtest.Sentences[:1], asrtest.Layout{Lead: 4 * time.Second})
	short := filepath.Join(dir, "short.mp4")
	ffmpegtest.Run(t, "-t", "1", "-i", c.Path, "-i", c.Path, "-map", "0:v", "-map", "1:a", "-c", "copy", short)
	if _, err := e.Transcribe(context.Background(), c.Path, "en"); err != nil {
		t.Fatalf("the whole video: %v", err)
	}
	if _, err := e.Transcribe(context.Background(), short, "en"); !errors.Is(err, asr.ErrNoSpeech) {
		t.Fatalf("err = %v, want ErrNoSpeech", err)
	}
}
