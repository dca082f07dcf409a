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
		return E(op, Invalid, "%s must match ^[a-z0-9][a-z0-9-]{0,62}$ (got %q)", what, truncate(s, 80))
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
			return E(op, Invalid, "%s must not contain control characters", what)
		}
	}
	return nil
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
		return "", E("check file type", Unsupported, "file %q has no extension; supported types are %s", truncate(filename, 80), strings.Join(SupportedExtensions, ", "))
	}
	return "", E("check file type", Unsupported, "file type %s is not supported; supported types are %s", truncate(ext, 20), strings.Join(SupportedExtensions, ", "))
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

func truncate(s string, n int) string {
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
