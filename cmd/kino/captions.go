package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/transcoder"
)

// Speech recognition engines of --captions-engine.
const (
	engineAuto         = "auto"         // pocketsphinx when its model is installed, else none
	enginePocketsphinx = "pocketsphinx" // required: kino does not start without its model
	engineNone         = "none"
)

// captionFlags registers the flags of generated captions on fs; parse
// fills cfg.
func captionFlags(fs *pflag.FlagSet, cfg *WorkerConfig) (parse func() error) {
	var auto string
	fs.StringVar(&cfg.CaptionsEngine, "captions-engine", env("KINO_CAPTIONS_ENGINE", engineAuto),
		"speech recognition for generated captions: pocketsphinx (offline, US English, Debian's pocketsphinx-en-us model), none, or auto (pocketsphinx when its model is installed) (env KINO_CAPTIONS_ENGINE)")
	fs.StringVar(&auto, "auto-captions", env("KINO_AUTO_CAPTIONS", ""),
		"plans whose videos get captions generated when they complete with audio, comma-separated (e.g. pro,business; default none) (env KINO_AUTO_CAPTIONS)")
	return func() error {
		switch cfg.CaptionsEngine {
		case engineAuto, enginePocketsphinx, engineNone:
		default:
			return fmt.Errorf("--captions-engine %q: want %s, %s or %s", cfg.CaptionsEngine, engineAuto, enginePocketsphinx, engineNone)
		}
		cfg.AutoCaptions = nil
		for _, p := range strings.Split(auto, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if _, ok := domain.DefaultPlans()[domain.Plan(p)]; !ok {
				return fmt.Errorf("--auto-captions: unknown plan %q (want free, pro or business)", p)
			}
			cfg.AutoCaptions = append(cfg.AutoCaptions, domain.Plan(p))
		}
		if len(cfg.AutoCaptions) > 0 && cfg.CaptionsEngine == engineNone {
			return errors.New("--auto-captions needs a --captions-engine")
		}
		return nil
	}
}

// speechEngine is the engine of cfg.CaptionsEngine (nil: none), running
// ffmpeg as user with limits, its scratch directories under scratch.
func speechEngine(cfg WorkerConfig, jail ffmpeg.Jail, scratch string, log *slog.Logger) (transcoder.Speech, error) {
	if cfg.CaptionsEngine == engineNone {
		return nil, nil
	}
	pc := asr.PocketsphinxConfig{Jail: jail, ScratchDir: scratch}
	if cfg.FFmpeg.Bounds != nil {
		pc.Bounds = *cfg.FFmpeg.Bounds
	}
	e, err := asr.NewPocketsphinx(pc)
	switch {
	case err == nil:
		return e, nil
	case cfg.CaptionsEngine == engineAuto || cfg.CaptionsEngine == "":
		if log != nil {
			log.Info("generated captions are off: no speech recognition model (apt-get install pocketsphinx-en-us)", "err", err)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("--captions-engine pocketsphinx: %w", err)
}

// captionLanguages are the languages the API offers to generate captions
// in: the engine's, when this kino has one.
func captionLanguages(cfg WorkerConfig) []string {
	e, err := speechEngine(cfg, ffmpeg.Jail{}, "", nil)
	if err != nil || e == nil {
		return nil
	}
	return e.Languages()
}
