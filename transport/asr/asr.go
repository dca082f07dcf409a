package asr

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Segment is one caption cue: Text (at most two lines, joined by "\n") is
// shown from Start to End, times from the start of the media.
type Segment struct {
	Start, End time.Duration
	Text       string
}

// Engine turns speech into timed text. Implementations are safe for
// concurrent use; every one passes asrtest.Run.
type Engine interface {
	// Transcribe recognizes the speech of the first audio stream of the
	// media file at input in language (a BCP 47 tag such as "en" or
	// "en-US") and returns its cues in time order, never overlapping.
	//
	// A file without an audio stream gives an error wrapping ErrNoAudio,
	// one where nothing is recognized (silence, music, noise) ErrNoSpeech,
	// a language the engine does not know ErrLanguage: all of them domain
	// Unsupported, permanent. A cancelled ctx, an engine killed for taking
	// too long or a missing binary give a plain (transient) error.
	Transcribe(ctx context.Context, input, language string) ([]Segment, error)
	// Languages are the tags Transcribe accepts, e.g. ["en"].
	Languages() []string
}

// Permanent failures of Transcribe, wrapped in a domain Unsupported error
// whose message a client may read.
var (
	ErrNoAudio  = errors.New("the video has no audio")
	ErrNoSpeech = errors.New("no speech was recognized in the audio")
	ErrLanguage = errors.New("captions cannot be generated in this language")
)

const opTranscribe = "generate captions"

// supports reports whether language (a BCP 47 tag) is one of langs, by
// its primary subtag, ignoring case: "en-GB" and "EN" ask for "en".
func supports(langs []string, language string) bool {
	primary, _, _ := strings.Cut(language, "-")
	for _, l := range langs {
		p, _, _ := strings.Cut(l, "-")
		if primary != "" && strings.EqualFold(p, primary) {
			return true
		}
	}
	return false
}
