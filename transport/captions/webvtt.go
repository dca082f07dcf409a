package captions

import "strings"

// isWebVTT reports whether text starts with the WebVTT signature: "WEBVTT"
// alone on its line or followed by a space or a tab.
func isWebVTT(text string) bool {
	rest, ok := strings.CutPrefix(text, "WEBVTT")
	return ok && (rest == "" || strings.ContainsRune(" \t\r\n", rune(rest[0])))
}

// parseWebVTT reads a WebVTT file as the WebVTT parser does: the header
// (the signature line and the lines up to the first blank line), then
// blocks separated by blank lines. A NOTE, STYLE or REGION block is
// skipped, as is any other block without a timing. A cue is an optional
// identifier line, a timing line with its settings, and its text up to a
// blank line or a line holding "-->", which starts the next block. Unlike
// a browser, which skips a cue whose timing it cannot read, it answers an
// error naming the line, and it reads a timing line inside the header as
// the first cue.
func parseWebVTT(l *lines) ([]rawCue, error) {
	l.next() // the signature
	for {
		line, ok := l.next()
		if !ok || isBlank(line) {
			break
		}
		if strings.Contains(line, "-->") {
			l.unread()
			break
		}
	}
	var cues []rawCue
	for {
		l.skipBlank()
		first, ok := l.next()
		if !ok {
			return cues, nil
		}
		if isBlockKeyword(first) {
			skipWebVTTBlock(l)
			continue
		}
		timingLine, n := first, l.n
		if !strings.Contains(first, "-->") {
			second, ok := l.next()
			if !ok || isBlank(second) || !strings.Contains(second, "-->") {
				if ok {
					l.unread()
				}
				skipWebVTTBlock(l)
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
		c := rawCue{line: n, start: t.start, end: t.end, settings: parseSettings(t.rest)}
		for {
			line, ok := l.next()
			if !ok || isBlank(line) {
				break
			}
			if strings.Contains(line, "-->") {
				l.unread()
				break
			}
			if err := c.add(line); err != nil {
				return nil, err
			}
		}
		cues = append(cues, c)
	}
}

// isBlockKeyword reports whether a block's first line starts a comment, a
// style sheet or a region definition.
func isBlockKeyword(line string) bool {
	for _, k := range []string{"NOTE", "STYLE", "REGION"} {
		if rest, ok := strings.CutPrefix(line, k); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return true
		}
	}
	return false
}

// skipWebVTTBlock reads past a block that is not a cue: up to a blank
// line, or a line holding "-->", which starts the next block.
func skipWebVTTBlock(l *lines) {
	for {
		line, ok := l.next()
		if !ok || isBlank(line) {
			return
		}
		if strings.Contains(line, "-->") {
			l.unread()
			return
		}
	}
}
