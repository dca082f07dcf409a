package captions

import "strings"

// parseSRT reads SRT blocks: an optional cue number (any line that is not
// a timing), a timing line, then text lines up to a blank line. Anything
// after the end time (the X1: Y1: coordinates of some writers) is
// dropped. It is lenient where the meaning is plain:
//   - a timing line right after a text line starts a new cue, and a cue
//     number just before it is not text;
//   - a block with no timing after a cue is more text of that cue (a blank
//     line inside the text), and a block that is only a number is skipped;
//   - a file that does not start with a cue (after blank lines) is not
//     SRT at all.
//
// A line meant as a timing that does not read as one is an error.
func parseSRT(l *lines) ([]rawCue, error) {
	var cues []rawCue
	for {
		l.skipBlank()
		first, ok := l.next()
		if !ok {
			if len(cues) == 0 {
				return nil, notCaptions()
			}
			return cues, nil
		}
		timingLine, n := first, l.n
		if _, ok := parseTiming(first); !ok {
			if looksLikeTiming(first) {
				_, err := readTiming(first, l.n)
				return nil, err
			}
			second, ok := l.next()
			if _, isTiming := parseTiming(second); !ok || !isTiming {
				if ok && looksLikeTiming(second) {
					_, err := readTiming(second, l.n)
					return nil, err
				}
				if ok {
					l.unread()
				}
				if len(cues) == 0 {
					return nil, notCaptions()
				}
				// Not a cue: more text of the previous cue, unless it is a
				// lone cue number.
				text := readSRTText(l)
				if len(text) == 0 && allDigits(strings.TrimSpace(first)) {
					continue
				}
				if err := cues[len(cues)-1].add(append([]string{first}, text...)...); err != nil {
					return nil, err
				}
				continue
			}
			timingLine, n = second, l.n
		}
		t, err := readTiming(timingLine, n)
		if err != nil {
			return nil, err
		}
		if len(cues) == MaxCues {
			return nil, tooManyCues()
		}
		c := rawCue{line: n, start: t.start, end: t.end}
		if err := c.add(readSRTText(l)...); err != nil {
			return nil, err
		}
		cues = append(cues, c)
	}
}

// readSRTText reads a cue's text lines up to a blank line or a timing
// line; a cue number just before a timing line is left out. It stops
// early once the lines are more than a cue may hold.
func readSRTText(l *lines) []string {
	var text []string
	size := 0
	for size <= maxRawCueText {
		line, ok := l.next()
		if !ok || isBlank(line) {
			return text
		}
		if _, isTiming := parseTiming(line); isTiming {
			l.unread()
			if k := len(text) - 1; k >= 0 && allDigits(strings.TrimSpace(text[k])) {
				text = text[:k]
			}
			return text
		}
		text = append(text, line)
		size += len(line) + 1
	}
	return text
}
