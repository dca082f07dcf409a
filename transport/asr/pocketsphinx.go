package asr

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg"
)

// Debian's pocketsphinx-en-us: the US English acoustic model, dictionary
// and language model.
const (
	DefaultModel = "/usr/share/pocketsphinx/model/en-us/en-us"
	DefaultDict  = "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"
	DefaultLM    = "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin"
)

// PocketsphinxConfig configures NewPocketsphinx; the zero value is US
// English with Debian's model, ffmpeg run as kino runs it, unconfined.
type PocketsphinxConfig struct {
	// Language is the BCP 47 tag of what the model recognizes ("": "en").
	Language string
	// Model is the acoustic model directory, Dict the pronunciation
	// dictionary, LM the language model ("": Debian's US English).
	Model, Dict, LM string
	// Jail confines ffmpeg; its Dir is replaced by a scratch directory of
	// each run's own, made under ScratchDir ("": os.TempDir()) and removed
	// after it (owned by Jail.User when set, who must be able to read the
	// input).
	Jail       ffmpeg.Jail
	ScratchDir string
	// Bounds are the limits Probe checks the input against (zero:
	// ffmpeg.DefaultBounds()).
	Bounds ffmpeg.Bounds
	// MaxRealtime bounds a run: ffmpeg may use 30 s plus MaxRealtime
	// times the media's length of CPU time (0: 2; where resource limits
	// apply, see Jail) and ten times that of wall-clock time. Recognition
	// runs at about a quarter of real time on one core.
	MaxRealtime float64
	// Pause is how long a quieter stretch than PauseLevel must last to
	// separate two stretches of speech (0: 300 ms; "": -40dB). Pauses
	// time the cues; the recognizer finds utterances by itself.
	Pause      time.Duration
	PauseLevel string
}

// Pocketsphinx is the Engine of CMU PocketSphinx through ffmpeg's asr
// filter: offline, CPU only, one ffmpeg per Transcribe.
type Pocketsphinx struct {
	cfg PocketsphinxConfig
}

var _ Engine = (*Pocketsphinx)(nil)

// NewPocketsphinx checks cfg (the model files must exist) and fills its
// defaults.
func NewPocketsphinx(cfg PocketsphinxConfig) (*Pocketsphinx, error) {
	cfg = withDefaults(cfg)
	if !pauseLevel.MatchString(cfg.PauseLevel) {
		return nil, fmt.Errorf("pocketsphinx: pause level %q is neither a ratio (0.001) nor decibels (-40dB)", cfg.PauseLevel)
	}
	for _, p := range []string{cfg.Model, cfg.Dict, cfg.LM} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("pocketsphinx model (Debian package pocketsphinx-en-us): %w", err)
		}
	}
	return &Pocketsphinx{cfg: cfg}, nil
}

// pauseLevel is what silencedetect's noise option takes.
var pauseLevel = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?(dB)?$`)

func withDefaults(cfg PocketsphinxConfig) PocketsphinxConfig {
	if cfg.Language == "" {
		cfg.Language = "en"
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Dict == "" {
		cfg.Dict = DefaultDict
	}
	if cfg.LM == "" {
		cfg.LM = DefaultLM
	}
	if cfg.Bounds == (ffmpeg.Bounds{}) {
		cfg.Bounds = ffmpeg.DefaultBounds()
	}
	if cfg.MaxRealtime <= 0 {
		cfg.MaxRealtime = 2
	}
	if cfg.Pause <= 0 {
		cfg.Pause = 300 * time.Millisecond
	}
	if cfg.PauseLevel == "" {
		cfg.PauseLevel = "-40dB"
	}
	return cfg
}

// Languages is the one language of the model.
func (p *Pocketsphinx) Languages() []string { return []string{p.cfg.Language} }

// metaFile is where ametadata writes, in the run's scratch directory.
const metaFile = "asr.meta"

// Transcribe probes input (refusing what kino refuses to host), then runs
// one ffmpeg over its audio: pauses found by silencedetect, utterances by
// the asr filter, both written by ametadata to a file read afterwards.
func (p *Pocketsphinx) Transcribe(ctx context.Context, input, language string) ([]Segment, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", opTranscribe, err)
	}
	if !supports(p.Languages(), language) {
		return nil, domain.Wrap(opTranscribe, domain.Unsupported, fmt.Errorf("%w: %q", ErrLanguage, language), ErrLanguage.Error())
	}
	path, err := filepath.Abs(input)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opTranscribe, err)
	}
	in, err := ffmpeg.OpenInput(path, "")
	if err != nil {
		return nil, err
	}
	info, err := ffmpeg.Probe(ctx, in, ffmpeg.ProbeOptions{Jail: p.cfg.Jail, Bounds: p.cfg.Bounds})
	if err != nil {
		return nil, err
	}
	if !info.HasAudio {
		return nil, domain.Wrap(opTranscribe, domain.Unsupported, ErrNoAudio, ErrNoAudio.Error())
	}

	dir, err := p.scratch()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	jail := p.cfg.Jail
	jail.Dir = dir
	length := info.Length()
	// The work is bounded in CPU time; the wall clock gets ten times as
	// long: recognition is one thread, which a machine busy with
	// multi-threaded encodes gives a small share of a core.
	work := 30*time.Second + time.Duration(p.cfg.MaxRealtime*length*float64(time.Second))
	if jail.Limits != (ffmpeg.RLimits{}) && jail.Limits.CPU == 0 {
		jail.Limits.CPU = work // where limits apply (prlimit), not added where none do
	}
	err = ffmpeg.Run(ctx, ffmpeg.AudioFilterArgs(in, info, p.filter()), ffmpeg.RunOptions{
		Duration:   length,
		MaxRuntime: 10 * work,
		Jail:       jail,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opTranscribe, err)
	}
	utts, sound, err := readMetadata(filepath.Join(dir, metaFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opTranscribe, err)
	}
	segs := cues(utts, sound)
	if len(segs) == 0 {
		return nil, domain.Wrap(opTranscribe, domain.Unsupported, ErrNoSpeech, ErrNoSpeech.Error())
	}
	return segs, nil
}

// scratch makes a run's directory, owned by the jail's user.
func (p *Pocketsphinx) scratch() (string, error) {
	dir, err := os.MkdirTemp(p.cfg.ScratchDir, "asr-")
	if err != nil {
		return "", fmt.Errorf("%s: %w", opTranscribe, err)
	}
	if u := p.cfg.Jail.User; u != nil {
		if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("%s: %w", opTranscribe, err)
		}
	}
	return dir, nil
}

// recognizerPad is the silence added after the audio: the asr filter
// reports an utterance only once a pause follows it.
const recognizerPad = "1"

// filter is the audio filter graph of a run: 16 kHz mono (what the model
// was trained on), on the file's clock (see below), pauses marked by
// silencedetect,
// a second of silence after the end, the recognizer, and every frame's
// metadata written to metaFile. Times are the file's, from its start (as
// the transcoder's outputs start), not the audio stream's: an audio stream
// that starts later than the video, or has gaps, is padded with silence
// from 0 (aresample's first_pts and async), so that the pauses found are
// pauses in the sound, not the lack of it.
func (p *Pocketsphinx) filter() string {
	return strings.Join([]string{
		"aresample=16000:async=1:first_pts=0",
		"aformat=sample_fmts=s16:channel_layouts=mono",
		"silencedetect=noise=" + escape(p.cfg.PauseLevel) + ":duration=" + strconv.FormatFloat(p.cfg.Pause.Seconds(), 'f', -1, 64),
		"apad=pad_dur=" + recognizerPad,
		"asr=rate=16000:hmm=" + escape(p.cfg.Model) + ":dict=" + escape(p.cfg.Dict) + ":lm=" + escape(p.cfg.LM),
		"ametadata=mode=print:file=" + metaFile,
	}, ",")
}

// escape makes s one option value in a filter graph: escaped for the
// filter's options (\ ' :) and again for the graph (\ ' [ ] , ;).
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '\'', ':':
			b.WriteString(`\\\`) // \ for the option, its own \ and the character's escaped for the graph
		case '[', ']', ',', ';':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
