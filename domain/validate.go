package domain

import (
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidSlug reports whether s is a valid collection or account slug.
func ValidSlug(s string) bool { return slugRE.MatchString(s) }

func checkSlug(op, what, s string) error {
	if !ValidSlug(s) {
		return E(op, Invalid, "%s must match ^[a-z0-9][a-z0-9-]{0,62}$ (got %q)", what, Truncate(s, 80))
	}
	return nil
}

// MaxNameLen bounds display names and filenames (in characters).
const MaxNameLen = 255

func checkName(op, what, s string) error {
	if strings.TrimSpace(s) == "" {
		return E(op, Invalid, "%s must not be empty", what)
	}
	if !utf8.ValidString(s) {
		return E(op, Invalid, "%s must be valid UTF-8", what)
	}
	if n := utf8.RuneCountInString(s); n > MaxNameLen {
		return E(op, Invalid, "%s must be at most %d characters (got %d)", what, MaxNameLen, n)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return E(op, Invalid, "%s must not contain control characters (got U+%04X)", what, r)
		}
		if IsBidiControl(r) {
			return E(op, Invalid, "%s must not contain bidirectional formatting characters (got U+%04X)", what, r)
		}
		if IsInvisible(r) {
			return E(op, Invalid, "%s must not contain invisible or format characters (got U+%04X)", what, r)
		}
	}
	return nil
}

func checkLabel(op, label string) error {
	if label == "" {
		return nil
	}
	return checkName(op, "label", strings.TrimSpace(label))
}

// IsInvisible reports whether r shows as nothing, or as a blank, while it
// is not a space: format characters (Unicode category Cf: zero-width
// spaces and joiners, the byte order mark, the soft hyphen, word joiner,
// tag characters, interlinear annotations...), the combining grapheme
// joiner, the Hangul and braille fillers that render blank, and
// noncharacters. A name made of them looks empty or like another name.
func IsInvisible(r rune) bool {
	switch {
	case unicode.Is(unicode.Cf, r):
		return true
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800:
		return true
	case r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE: // noncharacters
		return true
	}
	return false
}

// IsBidiControl reports whether r changes the direction in which the text
// around it is shown: the embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069) and the implicit marks (U+200E, U+200F, U+061C). A name
// holding one can display as something it is not ("evil\u202Ekvm.mp4" shows
// as "evilpm4.mvk"), so names, filenames and labels refuse them. Line and
// paragraph separators (U+2028, U+2029) are refused with them: they break a
// name over lines in logs and listings.
func IsBidiControl(r rune) bool {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200E, r == 0x200F, r == 0x061C, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// SupportedExtensions are the input types of spec §2.
var SupportedExtensions = []string{".mp4", ".mov", ".avi", ".mkv", ".webm", ".ogv", ".flv", ".wmv", ".mpeg", ".mpg", ".3gp", ".3g2"}

// Extension returns the lower-cased extension of filename when it is a
// supported input type, or an Unsupported error.
func Extension(filename string) (string, error) {
	ext := strings.ToLower(path.Ext(filename))
	for _, s := range SupportedExtensions {
		if ext == s {
			return ext, nil
		}
	}
	if ext == "" {
		return "", E("check file type", Unsupported, "file %q has no extension; supported types are %s", Truncate(filename, 80), strings.Join(SupportedExtensions, ", "))
	}
	return "", E("check file type", Unsupported, "file type %s is not supported; supported types are %s", Truncate(ext, 20), strings.Join(SupportedExtensions, ", "))
}

// DisplayFilename turns a client-supplied filename into the name kept for
// display: the last path element (clients may send "C:\dir\a.mp4" or
// "../a.mp4"). It is never used as a path on disk.
func DisplayFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// Truncate shortens s to at most n bytes, on a rune boundary, and marks
// the cut with "…": for quoting a client's input back in a message.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// CheckFilename validates a display filename of an upload.
func CheckFilename(name string) error { return checkName("upload video", "filename", name) }

// ValidID reports whether id is a kino id: a canonical (upper-case) ULID.
// Every id taken from a request is checked before it becomes part of a
// subject or a path.
func ValidID(id string) bool {
	_, err := ulid.ParseStrict(id)
	return err == nil && strings.ToUpper(id) == id
}
