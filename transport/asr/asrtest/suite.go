package asrtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// Score is how well cues transcribe a corpus.
type Score struct {
	WER        float64 // word error rate against the corpus's words
	Recognized int     // words of the corpus found, in order
	Words      int     // words of the corpus
	// Misplaced are recognized words whose cue does not overlap the time
	// their sentence is said.
	Misplaced []string
}

func (s Score) String() string {
	return fmt.Sprintf("WER %.3f, %d of %d words recognized, %d misplaced", s.WER, s.Recognized, s.Words, len(s.Misplaced))
}

// Grade scores segs against c.
func Grade(c Corpus, segs []asr.Segment) Score {
	ref, sentence := c.Words()
	var hyp []string
	var cue []int
	for i, s := range segs {
		for _, w := range Words(s.Text) {
			hyp = append(hyp, w)
			cue = append(cue, i)
		}
	}
	wer, match := WER(ref, hyp)
	score := Score{WER: wer, Words: len(ref)}
	for j, i := range match {
		if i < 0 {
			continue
		}
		score.Recognized++
		said, seg := c.Spoken[sentence[i]], segs[cue[j]]
		if seg.End <= said.Start || seg.Start >= said.End {
			score.Misplaced = append(score.Misplaced, fmt.Sprintf("%q in cue %v-%v, said %v-%v", hyp[j], seg.Start, seg.End, said.Start, said.End))
		}
	}
	return score
}

// Readable checks that segs are in time order, do not overlap, last
// between 0 and 7 s and hold at most two lines of at most 42 characters.
func Readable(segs []asr.Segment) error {
	var prev time.Duration
	for i, s := range segs {
		if s.Start < prev || s.End <= s.Start || s.End-s.Start > 7*time.Second {
			return fmt.Errorf("cue %d: %v-%v after %v", i, s.Start, s.End, prev)
		}
		prev = s.End
		lines := strings.Split(s.Text, "\n")
		if len(lines) > 2 {
			return fmt.Errorf("cue %d: %d lines: %q", i, len(lines), s.Text)
		}
		for _, l := range lines {
			if len([]rune(l)) > 42 || strings.TrimSpace(l) == "" {
				return fmt.Errorf("cue %d: line %q", i, l)
			}
		}
	}
	return nil
}

// Run is the conformance suite of an Engine that knows English: speech
// made by Festival comes back as readable cues holding at least half of
// its words, each at the time its sentence is said (the measured word
// error rate is logged); a video without audio is ErrNoAudio, silence
// ErrNoSpeech, an unknown language ErrLanguage, all domain Unsupported;
// a cancelled context is an error wrapping context.Canceled.
func Run(t *testing.T, e asr.Engine) {
	t.Helper()
	if !contains(e.Languages(), "en") {
		t.Fatalf("Languages() = %q: the suite speaks English", e.Languages())
	}
	dir := t.TempDir()
	t.Run("speech", func(t *testing.T) {
		t.Parallel()
		c := Speech(t, dir, "speech.mp4", Sentences, 500*time.Millisecond, time.Second)
		start := time.Now()
		segs, err := e.Transcribe(context.Background(), c.Path, "en-US")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range segs {
			t.Logf("%v-%v %q", s.Start, s.End, s.Text)
		}
		score := Grade(c, segs)
		t.Logf("%s (Festival, %d sentences, %v of speech, transcribed in %v)", score, len(c.Spoken), c.Spoken[len(c.Spoken)-1].End, time.Since(start).Round(time.Millisecond))
		if 2*score.Recognized < score.Words {
			t.Errorf("%s: want at least half the words", score)
		}
		for _, m := range score.Misplaced {
			t.Errorf("misplaced: %s", m)
		}
		if err := Readable(segs); err != nil {
			t.Error(err)
		}
	})
	failures := []struct {
		name  string
		input func(t *testing.T) string
		lang  string
		want  error
	}{
		{"no audio", func(t *testing.T) string {
			return ffmpegtest.Clip(t, dir, "mute.mp4", 320, 180, 2, false)
		}, "en", asr.ErrNoAudio},
		{"silence", func(t *testing.T) string { return Silence(t, t.TempDir(), 3) }, "en", asr.ErrNoSpeech},
		{"unknown language", func(t *testing.T) string {
			return ffmpegtest.Clip(t, t.TempDir(), "tone.mp4", 320, 180, 1, true)
		}, "xx", asr.ErrLanguage},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := e.Transcribe(context.Background(), tt.input(t), tt.lang)
			if !errors.Is(err, tt.want) || domain.KindOf(err) != domain.Unsupported {
				t.Fatalf("err = %v (kind %v), want %v, Unsupported", err, domain.KindOf(err), tt.want)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		in := ffmpegtest.Clip(t, t.TempDir(), "tone.mp4", 320, 180, 2, true)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Transcribe(ctx, in, "en"); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func contains(langs []string, lang string) bool {
	for _, l := range langs {
		if p, _, _ := strings.Cut(l, "-"); strings.EqualFold(p, lang) {
			return true
		}
	}
	return false
}
