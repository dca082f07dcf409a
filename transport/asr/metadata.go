package asr

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// maxMetadata bounds the file ametadata writes: about 150 bytes an
// utterance and as much a pause, so 16 MiB is days of speech.
const maxMetadata = 16 << 20

// errMetadata is a metadata file that is not what ametadata writes.
var errMetadata = errors.New("unexpected asr metadata")

// readMetadata reads the file ametadata wrote (see parseMetadata).
func readMetadata(path string) ([]utterance, []span, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read asr metadata: %w", err)
	}
	defer f.Close()
	return parseMetadata(f)
}

// parseMetadata reads ametadata's print of frame metadata: a line
// "frame:N pts:P pts_time:T" before each frame's key=value lines. The asr
// filter's lavfi.asr.text is an utterance ending at the frame's time;
// silencedetect's lavfi.silence_start and lavfi.silence_end (their values
// are times) bound the pauses, and the sound is what lies between them.
// Other keys are ignored. Input over maxMetadata, or a line over 64 KiB,
// is an error.
func parseMetadata(r io.Reader) ([]utterance, []span, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxMetadata+1))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	var (
		utts    []utterance
		sound   []span
		at      time.Duration // the current frame's time
		from    time.Duration // where the current sound began
		inSound = true        // the audio starts with sound unless a pause starts at 0
		read    int
	)
	for sc.Scan() {
		line := sc.Text()
		read += len(line) + 1
		if rest, ok := strings.CutPrefix(line, "frame:"); ok {
			_, t, found := strings.Cut(rest, "pts_time:")
			if !found {
				return nil, nil, fmt.Errorf("%w: %q", errMetadata, line)
			}
			if d, ok := seconds(strings.TrimSpace(t)); ok {
				at = d
			}
			continue
		}
		key, value, _ := strings.Cut(line, "=")
		switch key {
		case "lavfi.asr.text":
			utts = append(utts, utterance{end: at, words: cleanWords(value)})
		case "lavfi.silence_start":
			d, ok := seconds(value)
			if !ok {
				return nil, nil, fmt.Errorf("%w: %q", errMetadata, line)
			}
			if inSound && d > from {
				sound = append(sound, span{from, d})
			}
			inSound = false
		case "lavfi.silence_end":
			d, ok := seconds(value)
			if !ok {
				return nil, nil, fmt.Errorf("%w: %q", errMetadata, line)
			}
			from, inSound = d, true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errMetadata, err)
	}
	if read > maxMetadata {
		return nil, nil, fmt.Errorf("%w: over %d bytes", errMetadata, maxMetadata)
	}
	if inSound && at > from {
		sound = append(sound, span{from, at})
	}
	return utts, sound, nil
}

// seconds parses a time in seconds (silencedetect prints -0.0something at
// the very start).
func seconds(s string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e9 {
		return 0, false
	}
	return time.Duration(max(f, 0) * float64(time.Second)), true
}

// cleanWords splits the recognizer's text into words, dropping fillers
// (<sil>, [NOISE], ++UH++), alternative pronunciation marks (word(2)) and
// anything but printable UTF-8 (a dictionary of another model may hold
// anything).
func cleanWords(text string) []string {
	text = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, text)
	var words []string
	for _, w := range strings.Fields(text) {
		if strings.ContainsAny(w[:1], "<[+") {
			continue
		}
		if i := strings.IndexByte(w, '('); i > 0 && strings.HasSuffix(w, ")") {
			w = w[:i]
		}
		words = append(words, w)
	}
	return words
}
