package hls

import (
	"errors"
	"fmt"
	"strings"
)

// Attr is one attribute of an attribute list: NAME=VALUE, Value as
// written (a quoted string keeps its quotes).
type Attr struct {
	Name, Value string
}

// Attrs is an attribute list (RFC 8216 4.2), its attributes in the order
// written.
type Attrs []Attr

// ParseAttrs reads an attribute list: NAME=VALUE pairs separated by
// commas, each name of A-Z, 0-9 and '-' and given once, each value a
// quoted string (no quote inside) or a non-empty run without quotes.
func ParseAttrs(list string) (Attrs, error) {
	var out Attrs
	seen := map[string]bool{}
	var bad error
	_, ok := walkAttrs(list, func(name, value string) string {
		switch {
		case bad != nil:
		case !attrName(name):
			bad = fmt.Errorf("bad attribute name %q", name)
		case seen[name]:
			bad = fmt.Errorf("attribute %s given twice", name)
		case value == "" || (!quoted(value) && strings.Contains(value, `"`)):
			bad = fmt.Errorf("bad value of attribute %s", name)
		}
		seen[name] = true
		out = append(out, Attr{name, value})
		return value
	})
	if bad != nil {
		return nil, bad
	}
	if !ok {
		return nil, errors.New("not an attribute list")
	}
	return out, nil
}

// String is the attribute list as written.
func (a Attrs) String() string {
	var b strings.Builder
	for i, at := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(at.Name + "=" + at.Value)
	}
	return b.String()
}

// Get is the value of attribute name, without its quotes; ok is false
// when there is none.
func (a Attrs) Get(name string) (value string, ok bool) {
	for _, at := range a {
		if at.Name == name {
			if quoted(at.Value) {
				return at.Value[1 : len(at.Value)-1], true
			}
			return at.Value, true
		}
	}
	return "", false
}

// Set is a with attribute name set to value (as written: Quote a string):
// in its place when a has it, else last.
func (a Attrs) Set(name, value string) Attrs {
	out := append(Attrs(nil), a...)
	for i := range out {
		if out[i].Name == name {
			out[i].Value = value
			return out
		}
	}
	return append(out, Attr{name, value})
}

// Quote is s as a quoted-string value.
func Quote(s string) string { return `"` + s + `"` }

// yesNo is a boolean as an enumerated-string value.
func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

func quoted(v string) bool { return len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' }

func attrName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range n {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// walkAttrs reads an attribute list as far as it can, each value through
// f, and gives back the list with f's values. The reading forgives: a
// name is what precedes '=' (unless it holds a quote or comma), a quoted
// value ends at the next quote, any other at the next comma; what cannot
// be read so is kept as it is, and ok is false then, as it is when a
// value is not followed by a comma or the end, or a comma by an
// attribute.
func walkAttrs(list string, f func(name, value string) string) (out string, ok bool) {
	var b strings.Builder
	ok = true
	rest := list
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 || strings.ContainsAny(rest[:eq], `",`) {
			b.WriteString(rest)
			return b.String(), false
		}
		name := rest[:eq]
		b.WriteString(rest[:eq+1])
		rest = rest[eq+1:]
		var value string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				b.WriteString(rest)
				return b.String(), false
			}
			value, rest = rest[:end+2], rest[end+2:]
		} else if comma := strings.IndexByte(rest, ','); comma >= 0 {
			value, rest = rest[:comma], rest[comma:]
		} else {
			value, rest = rest, ""
		}
		b.WriteString(f(name, value))
		switch {
		case strings.HasPrefix(rest, ","):
			b.WriteByte(',')
			rest = rest[1:]
			ok = ok && rest != ""
		case rest != "":
			ok = false
		}
	}
	return b.String(), ok
}

// RewriteURIs is one line of a playlist with every URI it lists through
// f: a URI line (read without the white space around it), and the
// URI="..." attributes of a tag (#EXT-X-MEDIA, #EXT-X-MAP,
// #EXT-X-I-FRAME-STREAM-INF, ...). Attributes are read as the HLS
// grammar has them (quoted strings hold no quote), so a name or a quoted
// value that merely contains URI= is not taken for one; a tag's
// attributes are read as far as they can be (walkAttrs), the rest kept as
// it is. Blank lines, comments and every other byte stay as they are.
func RewriteURIs(line string, f func(uri string) string) string {
	switch t := strings.TrimSpace(line); {
	case t == "":
		return line
	case strings.HasPrefix(t, "#"):
		colon := strings.IndexByte(line, ':')
		if !strings.HasPrefix(line, "#EXT") || colon < 0 || !strings.Contains(line[colon:], `URI="`) {
			return line
		}
		list, _ := walkAttrs(line[colon+1:], func(name, value string) string {
			if strings.TrimSpace(name) == "URI" && quoted(value) {
				return Quote(f(value[1 : len(value)-1]))
			}
			return value
		})
		return line[:colon+1] + list
	default:
		return f(t)
	}
}
