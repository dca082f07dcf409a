package captions

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
)

// Limits on what Parse accepts. The input is any client's upload, so each
// bounds the work and the stored size.
const (
	// MaxInput is the largest file Parse reads, in bytes. A caller reads at
	// most MaxInput+1 bytes (io.LimitReader) and passes them all: Parse
	// answers TooLarge for anything longer without looking at it.
	MaxInput = 2 << 20
	// MaxOutput is the most bytes Track.WebVTT may write for a track from
	// Parse (TooLarge past it): escaping can make the text five times
	// longer, and the file is stored in an event. It equals MaxInput, so
	// what Parse wrote reads again.
	MaxOutput = MaxInput
	// MaxCues is the most cues a file may hold (TooLarge past it).
	MaxCues = 10_000
	// MaxCueText is the most bytes of one cue's text, as written in WebVTT
	// (escaped).
	MaxCueText = 1000
	// MaxCueLines is the most lines of one cue's text.
	MaxCueLines = 8
	// MaxTime is the latest a cue may start or end. The caller checks
	// Track.End against the video's own duration.
	MaxTime = 24 * time.Hour
)

// maxRawCueText bounds a cue's text before it is cleaned, so a cue made
// of tags that clean away to nothing still costs little.
const maxRawCueText = 4 * MaxCueText

// Format is the syntax a caption file was written in.
type Format string

// The formats Parse reads.
const (
	FormatWebVTT Format = "webvtt"
	FormatSRT    Format = "srt"
)

// Cue is one caption: the text shown from Start until End.
type Cue struct {
	Start, End time.Duration // whole milliseconds; End > Start
	// Settings are the cue's WebVTT settings (vertical, line, position,
	// size, align) in that order, separated by a space; "" if none.
	Settings string
	// Text is the cue's payload as valid WebVTT cue text: its lines joined
	// by \n, none of them blank.
	Text string
}

// Track is the cues of a caption file, ordered by start time.
type Track struct {
	Cues []Cue
}

const op = "parse captions"

// Parse reads a WebVTT file (one that starts with the "WEBVTT" signature)
// or else an SRT file, and returns its cues cleaned and sorted by start.
// Errors are domain errors: TooLarge past MaxInput, MaxCues or MaxOutput,
// Unsupported
// for something that is not a caption file, Invalid otherwise, each with a
// message for the client that names the line where it can.
func Parse(data []byte) (*Track, Format, error) {
	if len(data) > MaxInput {
		return nil, "", domain.E(op, domain.TooLarge, "the file is larger than %d bytes (2 MiB)", MaxInput)
	}
	text, err := decode(data)
	if err != nil {
		return nil, "", err
	}
	format, parse := FormatSRT, parseSRT
	if isWebVTT(text) {
		format, parse = FormatWebVTT, parseWebVTT
	}
	raws, err := parse(&lines{s: text})
	if err != nil {
		return nil, "", err
	}
	t, err := build(raws)
	if err != nil {
		return nil, "", err
	}
	return t, format, nil
}

// End returns when the last cue ends, 0 for no cues.
func (t *Track) End() time.Duration {
	var end time.Duration
	for _, c := range t.Cues {
		end = max(end, c.End)
	}
	return end
}

// WebVTT writes the track as a WebVTT file: the signature line, then each
// cue as its timing line (with its settings) and its text, each followed
// by a blank line. It writes no cue identifiers, comments, styles or
// regions. The cues are written as they are: those of a Track from Parse
// make a valid file that Parse reads back to the same cues.
func (t *Track) WebVTT() []byte {
	n := len(header)
	for _, c := range t.Cues {
		n += c.size()
	}
	b := make([]byte, 0, n)
	b = append(b, header...)
	for _, c := range t.Cues {
		b = appendTimestamp(b, c.Start)
		b = append(b, " --> "...)
		b = appendTimestamp(b, c.End)
		if c.Settings != "" {
			b = append(b, ' ')
			b = append(b, c.Settings...)
		}
		b = append(b, '\n')
		b = append(b, c.Text...)
		b = append(b, "\n\n"...)
	}
	return b
}

const header = "WEBVTT\n\n"

// size returns the bytes WebVTT writes for c, exactly for times under 100
// hours (every time Parse returns).
func (c Cue) size() int {
	n := len("00:00:00.000 --> 00:00:00.000\n") + len(c.Text) + len("\n\n")
	if c.Settings != "" {
		n += 1 + len(c.Settings)
	}
	return n
}

// rawCue is a cue as read, before its text is cleaned and checked.
type rawCue struct {
	line       int // the line number of its timing
	start, end time.Duration
	settings   settings
	text       []string // its payload lines as written
	size       int      // the bytes of text, a line ending counted as one
}

// add appends payload lines, failing once the text is past what cleaning
// could bring within MaxCueText: a cue of a million lines, or of tags
// that clean away, is refused as soon as it is read.
func (c *rawCue) add(lines ...string) error {
	for _, l := range lines {
		c.size += len(l) + 1
	}
	if c.size > maxRawCueText {
		return invalid("the cue at line %d has more than %d bytes of text", c.line, MaxCueText)
	}
	c.text = append(c.text, lines...)
	return nil
}

// build cleans each cue's text, drops the cues that show nothing (no
// text, or an end not after the start), checks the text limits and
// MaxOutput, and sorts the rest by start.
func build(raws []rawCue) (*Track, error) {
	t := &Track{Cues: make([]Cue, 0, len(raws))}
	size := len(header)
	for _, r := range raws {
		if r.end <= r.start {
			continue
		}
		text, an := cleanText(r.text)
		if text == "" {
			continue
		}
		if len(text) > MaxCueText {
			return nil, invalid("the cue at line %d has %d bytes of text once written as WebVTT; at most %d are allowed", r.line, len(text), MaxCueText)
		}
		if n := strings.Count(text, "\n") + 1; n > MaxCueLines {
			return nil, invalid("the cue at line %d has %d lines of text; at most %d are allowed", r.line, n, MaxCueLines)
		}
		if an >= '7' && an <= '9' && r.settings[settingLine] == "" {
			// {\an7}, {\an8} and {\an9} put an SRT cue at the top.
			r.settings[settingLine] = "0"
		}
		c := Cue{Start: r.start, End: r.end, Settings: r.settings.String(), Text: text}
		if size += c.size(); size > MaxOutput {
			return nil, domain.E(op, domain.TooLarge, "the cues come to more than %d bytes (2 MiB) once written as WebVTT", MaxOutput)
		}
		t.Cues = append(t.Cues, c)
	}
	if len(t.Cues) == 0 {
		return nil, invalid("the file holds no cues")
	}
	slices.SortStableFunc(t.Cues, func(a, b Cue) int { return cmp.Compare(a.Start, b.Start) })
	return t, nil
}

func invalid(format string, args ...any) error {
	return domain.E(op, domain.Invalid, format, args...)
}

// lineError is an Invalid error about one line of the file.
func lineError(n int, format string, args ...any) error {
	return domain.E(op, domain.Invalid, "line %d: %s", n, fmt.Sprintf(format, args...))
}

// tooManyCues is the error for a file past MaxCues.
func tooManyCues() error {
	return domain.E(op, domain.TooLarge, "the file holds more than %d cues", MaxCues)
}

// quote quotes a line for an error message, shortened to keep the message
// small.
func quote(s string) string {
	const limit = 60
	if len(s) > limit {
		i := limit
		for i > 0 && !isRuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
