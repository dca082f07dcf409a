package captions

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/kino-video/kino/domain"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// decode turns the file's bytes into text: UTF-16 when it starts with a
// UTF-16 byte order mark, UTF-8 when the bytes are valid UTF-8 (after an
// optional byte order mark), and Windows-1252 otherwise, the encoding of
// most SRT files that are not UTF-8. Text holding a NUL is not a caption
// file (a PNG or an MP4 holds many).
func decode(data []byte) (string, error) {
	var text string
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		b, err := unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder().Bytes(data)
		if err != nil {
			return "", notCaptions()
		}
		text = string(b)
	case utf8.Valid(bytes.TrimPrefix(data, utf8BOM)):
		text = string(bytes.TrimPrefix(data, utf8BOM))
	default:
		text = decodeWindows1252(bytes.TrimPrefix(data, utf8BOM))
	}
	if strings.IndexByte(text, 0) >= 0 {
		return "", notCaptions()
	}
	return text, nil
}

// decodeWindows1252 decodes data into a string of exactly the size needed.
func decodeWindows1252(data []byte) string {
	n := 0
	for _, c := range data {
		if c < utf8.RuneSelf {
			n++
		} else {
			n += utf8.RuneLen(charmap.Windows1252.DecodeByte(c))
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, c := range data {
		if c < utf8.RuneSelf {
			b.WriteByte(c)
		} else {
			b.WriteRune(charmap.Windows1252.DecodeByte(c))
		}
	}
	return b.String()
}

func notCaptions() error {
	return domain.E(op, domain.Unsupported, "not a WebVTT or SRT file")
}

// lines reads text line by line. A line ends at \n, \r\n or a lone \r;
// the last line needs no ending.
type lines struct {
	s              string
	pos, n         int // where the next line starts; the number of the last line read
	prevPos, prevN int // pos and n before the last next, for unread
}

// next returns the next line without its ending, false at the end.
func (l *lines) next() (string, bool) {
	if l.pos >= len(l.s) {
		return "", false
	}
	l.prevPos, l.prevN = l.pos, l.n
	rest := l.s[l.pos:]
	line := rest
	i := strings.IndexAny(rest, "\r\n")
	if i < 0 {
		l.pos = len(l.s)
	} else {
		line = rest[:i]
		l.pos += i + 1
		if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
			l.pos++
		}
	}
	l.n++
	return line, true
}

// unread steps back over the line next returned last, so next returns it
// again.
func (l *lines) unread() { l.pos, l.n = l.prevPos, l.prevN }

// peek returns the next line without reading it.
func (l *lines) peek() (string, bool) {
	line, ok := l.next()
	if ok {
		l.unread()
	}
	return line, ok
}

// skipBlank reads past blank lines.
func (l *lines) skipBlank() {
	for {
		line, ok := l.next()
		if !ok {
			return
		}
		if !isBlank(line) {
			l.unread()
			return
		}
	}
}

// isBlank reports whether a line is empty or only white space: such a
// line ends a cue.
func isBlank(line string) bool { return strings.TrimSpace(line) == "" }
