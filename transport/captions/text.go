package captions

import (
	"html"
	"strings"
	"unicode"
)

// maxDepth is how deeply tags may nest; a start tag deeper is dropped.
const maxDepth = 16

// cleanText turns a cue's payload lines into valid WebVTT cue text, and
// returns the alignment digit of an ASS {\anN} code it dropped, or 0.
//
// Each line loses its control characters (a tab becomes a space), its
// bidirectional embedding, override and isolate characters and any byte
// order mark. Then its markup is rewritten:
//   - The tags of WebVTT cue text are kept: i, b, u, c, ruby, rt (inside
//     ruby), with their classes, v and lang with their annotation, and
//     timestamps, written as hh:mm:ss.mmm. A tag name is read without
//     regard to case (SRT writers use <I>). An end tag is kept when it
//     closes the innermost open tag, as a WebVTT parser ignores the others;
//     tags left open are closed by the parser at the end of the cue.
//   - Any other '<' that starts a tag (a letter, '/' or a digit after it,
//     and a '>' later on the line), such as SRT's <font color=...>, is
//     dropped with its tag; its text stays.
//   - A character reference (&amp;, &eacute;, &#233;, &#xE9;) becomes its
//     character, except &, <, >, no-break space and the direction marks,
//     written as &amp; &lt; &gt; &nbsp; &lrm; &rlm;. A bare '&', '<' or
//     '>' is escaped.
//   - ASS override codes in braces ({\an8}, {\i1}, {\pos(10,20)}) are
//     dropped.
//
// Lines are trimmed of white space, and lines left empty are dropped: an
// empty line would end the cue.
func cleanText(raw []string) (string, byte) {
	var c cleaner
	var b strings.Builder
	for _, line := range raw {
		line = strings.Map(keepRune, line)
		line = c.dropASS(c.markup(line, true))
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return b.String(), c.an
}

// keepRune maps a tab to a space and drops the characters cue text must
// not hold.
func keepRune(r rune) rune {
	if r == '\t' {
		return ' '
	}
	if forbidden(r) {
		return -1
	}
	return r
}

// forbidden reports whether r is a control character, a bidirectional
// embedding, override or isolate (which would reorder the text around the
// cue), or a byte order mark.
func forbidden(r rune) bool {
	return unicode.IsControl(r) || r == '\uFEFF' ||
		('\u202A' <= r && r <= '\u202E') || ('\u2066' <= r && r <= '\u2069')
}

// cleaner holds what one cue's lines share: the open tags and the ASS
// alignment seen.
type cleaner struct {
	open []string // the names of the open tags, innermost last
	an   byte
}

// markup rewrites a line's tags and character references; with tags
// false (an annotation) every '<' is escaped.
func (c *cleaner) markup(s string, tags bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			if j := tagEnd(s, i); tags && j > 0 {
				b.WriteString(c.tag(s[i+1 : j]))
				i = j + 1
				continue
			}
			b.WriteString("&lt;")
			i++
		case '>':
			b.WriteString("&gt;")
			i++
		case '&':
			decoded, n := reference(s[i:])
			if n == 0 {
				b.WriteString("&amp;")
				i++
				continue
			}
			for _, r := range decoded {
				writeChar(&b, r)
			}
			i += n
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// tagEnd returns the index of the '>' that ends the tag starting at s[i],
// or -1 when s[i] does not start one.
func tagEnd(s string, i int) int {
	if i+1 >= len(s) {
		return -1
	}
	if c := s[i+1]; !isDigit(c) && c != '/' && !('a' <= c|0x20 && c|0x20 <= 'z') {
		return -1
	}
	j := strings.IndexByte(s[i+1:], '>')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// tag rewrites the tag whose text (between '<' and '>') is t, "" to drop
// it, and tracks the open tags.
func (c *cleaner) tag(t string) string {
	if name, ok := strings.CutPrefix(t, "/"); ok {
		name = strings.ToLower(strings.TrimSpace(name))
		n := len(c.open)
		switch {
		case n > 0 && c.open[n-1] == name:
			c.open = c.open[:n-1]
			return "</" + name + ">"
		case name == "ruby" && n > 1 && c.open[n-1] == "rt" && c.open[n-2] == "ruby":
			// </ruby> closes an open rt too.
			c.open = c.open[:n-2]
			return "</ruby>"
		}
		return ""
	}
	if isDigit(t[0]) {
		d, rest, ok := parseTimestamp(t)
		if !ok || rest != "" || d > MaxTime {
			return ""
		}
		return "<" + string(appendTimestamp(nil, d)) + ">"
	}
	head, annotation, _ := strings.Cut(t, " ")
	name, classes, _ := strings.Cut(head, ".")
	name = strings.ToLower(name)
	switch name {
	case "i", "b", "u", "c", "v", "lang", "ruby", "rt":
	default:
		return ""
	}
	n := len(c.open)
	if n >= maxDepth || (name == "rt" && (n == 0 || c.open[n-1] != "ruby")) {
		return ""
	}
	var b strings.Builder
	b.WriteByte('<')
	b.WriteString(name)
	for class := range strings.SplitSeq(classes, ".") {
		if isClassName(class) {
			b.WriteByte('.')
			b.WriteString(class)
		}
	}
	if name == "v" || name == "lang" {
		// The voice's name or the language tag; required.
		annotation = strings.Join(strings.Fields(c.markup(annotation, false)), " ")
		if annotation == "" {
			return ""
		}
		b.WriteByte(' ')
		b.WriteString(annotation)
	}
	b.WriteByte('>')
	if strings.Contains(b.String(), "-->") {
		// A line holding "-->" would end the cue.
		return ""
	}
	c.open = append(c.open, name)
	return b.String()
}

// isClassName reports whether s is a class name kept: ASCII letters,
// digits, '-' and '_'.
func isClassName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && c != '-' && c != '_' && !('a' <= c|0x20 && c|0x20 <= 'z') {
			return false
		}
	}
	return true
}

// reference reads the character reference at the start of s (which starts
// with '&'): a named one of HTML ending in ';', or a decimal or
// hexadecimal one. It returns the characters and the length read, 0 if s
// does not start with one.
func reference(s string) (string, int) {
	end := strings.IndexByte(s[:min(len(s), 34)], ';')
	if end < 2 {
		return "", 0
	}
	name := s[1:end]
	if num, ok := strings.CutPrefix(name, "#"); ok {
		hex, isHex := strings.CutPrefix(num, "x")
		if !isHex {
			hex, isHex = strings.CutPrefix(num, "X")
		}
		if isHex && (hex == "" || len(hex) > 6 || strings.Trim(hex, "0123456789abcdefABCDEF") != "") ||
			!isHex && (len(num) > 7 || !allDigits(num)) {
			return "", 0
		}
	} else if strings.Trim(name, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return "", 0
	}
	ref := s[:end+1]
	decoded := html.UnescapeString(ref)
	// An unknown name is left as it was; a name that only starts with a
	// known one ("&notit;" read as "&not" and "it;") keeps its ';'.
	if decoded == ref || (strings.HasSuffix(decoded, ";") && name != "semi") {
		return "", 0
	}
	return decoded, end + 1
}

// writeChar writes a character that came from a character reference:
// dropped if cue text must not hold it, escaped if it is markup or would
// not be seen.
func writeChar(b *strings.Builder, r rune) {
	switch {
	case forbidden(r):
	case r == '&':
		b.WriteString("&amp;")
	case r == '<':
		b.WriteString("&lt;")
	case r == '>':
		b.WriteString("&gt;")
	case r == '\u00A0':
		b.WriteString("&nbsp;")
	case r == '\u200E':
		b.WriteString("&lrm;")
	case r == '\u200F':
		b.WriteString("&rlm;")
	default:
		b.WriteRune(r)
	}
}

// dropASS removes ASS override blocks ("{\" up to "}", holding no '<',
// '>' or '&') from a line whose markup is already rewritten, including
// blocks that only form once an inner one is gone, and notes an \anN
// alignment.
func (c *cleaner) dropASS(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	b := make([]byte, 0, len(s))
	var starts []int // where the open blocks start in b
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && len(b) > 0 && b[len(b)-1] == '{':
			starts = append(starts, len(b)-1)
		case ch == '}' && len(starts) > 0:
			start := starts[len(starts)-1]
			starts = starts[:len(starts)-1]
			block := string(b[start:])
			if k := strings.Index(block, `\an`); k >= 0 && k+3 < len(block) && isDigit(block[k+3]) {
				c.an = block[k+3]
			}
			b = b[:start]
			continue
		case ch == '<' || ch == '>' || ch == '&':
			starts = starts[:0]
		}
		b = append(b, ch)
	}
	return string(b)
}
