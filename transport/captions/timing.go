package captions

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// parseTimestamp reads a timestamp at the start of s and returns it with
// the rest of s. It reads both formats' forms leniently: [h:]mm:ss then
// '.' or ',' and one to three digits of fraction, with hours of any
// number of digits and minutes and seconds of one or two. A timestamp of
// more hours than fit is read as math.MaxInt64, past MaxTime.
func parseTimestamp(s string) (time.Duration, string, bool) {
	var groups [3]string
	n := 0
	for {
		i := 0
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == 0 {
			return 0, "", false
		}
		groups[n], s = s[:i], s[i:]
		n++
		if n == 3 || s == "" || s[0] != ':' {
			break
		}
		s = s[1:]
	}
	if n < 2 || s == "" || (s[0] != '.' && s[0] != ',') {
		return 0, "", false
	}
	s = s[1:]
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 || i > 3 {
		return 0, "", false
	}
	frac, s := s[:i]+strings.Repeat("0", 3-i), s[i:]

	var hours string
	if n == 3 {
		hours, groups[0], groups[1] = groups[0], groups[1], groups[2]
	}
	if len(groups[0]) > 2 || len(groups[1]) > 2 {
		return 0, "", false
	}
	m, _ := strconv.Atoi(groups[0])
	sec, _ := strconv.Atoi(groups[1])
	ms, _ := strconv.Atoi(frac)
	if m > 59 || sec > 59 {
		return 0, "", false
	}
	var h int
	if hours != "" {
		hours = strings.TrimLeft(hours, "0")
		if len(hours) > 6 {
			return math.MaxInt64, s, true
		}
		h, _ = strconv.Atoi(hours)
	}
	d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute +
		time.Duration(sec)*time.Second + time.Duration(ms)*time.Millisecond
	return d, s, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// appendTimestamp writes d as hh:mm:ss.mmm.
func appendTimestamp(b []byte, d time.Duration) []byte {
	ms := max(d.Milliseconds(), 0)
	b = appendPadded(b, ms/3_600_000, 2)
	b = append(b, ':')
	b = appendPadded(b, ms/60_000%60, 2)
	b = append(b, ':')
	b = appendPadded(b, ms/1000%60, 2)
	b = append(b, '.')
	return appendPadded(b, ms%1000, 3)
}

func appendPadded(b []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// timing is a cue's timing line.
type timing struct {
	start, end time.Duration
	rest       string // what follows the end time, trimmed: WebVTT settings
}

// parseTiming reads a timing line: a timestamp, "-->" and a timestamp,
// with white space or none around the arrow, then optionally white space
// and the rest. A byte order mark before it (files joined together) is
// skipped.
func parseTiming(line string) (timing, bool) {
	var t timing
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "\ufeff"))
	var ok bool
	if t.start, s, ok = parseTimestamp(s); !ok {
		return t, false
	}
	s = strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(s, "-->") {
		return t, false
	}
	s = strings.TrimLeft(s[3:], " \t")
	if t.end, s, ok = parseTimestamp(s); !ok {
		return t, false
	}
	if s != "" && s[0] != ' ' && s[0] != '\t' {
		return t, false
	}
	t.rest = strings.TrimSpace(s)
	return t, true
}

// looksLikeTiming reports whether a line that is not a timing was meant
// as one: it has an arrow or starts with a timestamp.
func looksLikeTiming(line string) bool {
	if strings.Contains(line, "->") {
		return true
	}
	_, _, ok := parseTimestamp(strings.TrimSpace(line))
	return ok
}

// readTiming reads the timing line numbered n and checks it against
// MaxTime.
func readTiming(line string, n int) (timing, error) {
	t, ok := parseTiming(line)
	if !ok {
		return t, lineError(n, "%s is not a cue timing such as \"00:00:01.000 --> 00:00:02.500\"", quote(strings.TrimSpace(line)))
	}
	if t.start > MaxTime || t.end > MaxTime {
		return t, lineError(n, "%s: a cue may not start or end after %s", quote(strings.TrimSpace(line)), string(appendTimestamp(nil, MaxTime)))
	}
	return t, nil
}

// The WebVTT cue settings kept, in the order they are written.
const (
	settingVertical = iota
	settingLine
	settingPosition
	settingSize
	settingAlign
	numSettings
)

var settingNames = [numSettings]string{"vertical", "line", "position", "size", "align"}

// settings holds the value of each cue setting, "" for unset.
type settings [numSettings]string

// parseSettings reads WebVTT cue settings, keeping the valid values of
// vertical, line, position, size and align (the last one of each, as a
// WebVTT parser does) and dropping anything else: region (the regions
// are not kept), settings it does not know and values that are not valid.
func parseSettings(s string) settings {
	var out settings
	for _, field := range strings.Fields(s) {
		name, value, _ := strings.Cut(field, ":")
		switch name {
		case "vertical":
			if value == "rl" || value == "lr" {
				out[settingVertical] = value
			}
		case "line":
			v, align, hasAlign := strings.Cut(value, ",")
			if (isPercent(v) || isLineNumber(v)) && (!hasAlign || align == "start" || align == "center" || align == "end") {
				out[settingLine] = value
			}
		case "position":
			v, align, hasAlign := strings.Cut(value, ",")
			if isPercent(v) && (!hasAlign || align == "line-left" || align == "center" || align == "line-right") {
				out[settingPosition] = value
			}
		case "size":
			if isPercent(value) {
				out[settingSize] = value
			}
		case "align":
			switch value {
			case "start", "center", "end", "left", "right":
				out[settingAlign] = value
			case "middle": // the name of center in early drafts
				out[settingAlign] = "center"
			}
		}
	}
	return out
}

// String writes the settings as a WebVTT timing line carries them.
func (s settings) String() string {
	var b strings.Builder
	for i, v := range s {
		if v == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(settingNames[i])
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// isPercent reports whether s is a percentage from 0% to 100%: digits,
// optionally a fraction, then '%'.
func isPercent(s string) bool {
	v, ok := strings.CutSuffix(s, "%")
	if !ok || !isDecimal(v) {
		return false
	}
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f <= 100
}

// isLineNumber reports whether s is a line number: an optional minus,
// digits and optionally a fraction.
func isLineNumber(s string) bool {
	return isDecimal(strings.TrimPrefix(s, "-"))
}

// isDecimal reports whether s is a short unsigned decimal number: digits,
// optionally followed by '.' and digits.
func isDecimal(s string) bool {
	if s == "" || len(s) > 10 {
		return false
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	return allDigits(whole) && (!hasFrac || allDigits(frac))
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
