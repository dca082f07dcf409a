package domain

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Details are what an application says about a video: a title, a
// description, tags, and metadata of its own (its ids, like Stripe's
// metadata or Cloudflare Stream's meta). kino shows and searches them; it
// never interprets the metadata.
type Details struct {
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// Bounds of Details, in characters (runes) and counts.
const (
	MaxTitleLen         = 200
	MaxDescriptionLen   = 5000
	MaxTags             = 20
	MaxTagLen           = 40
	MaxMetadataKeys     = 20
	MaxMetadataKeyLen   = 40
	MaxMetadataValueLen = 500
)

var metadataKeyRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// ValidMetadataKey reports whether k may name a metadata value: 1 to
// MaxMetadataKeyLen of A-Z a-z 0-9 _ . -.
func ValidMetadataKey(k string) bool {
	return len(k) <= MaxMetadataKeyLen && metadataKeyRE.MatchString(k)
}

// DefaultTitle is a video's title when its upload names none: the
// filename without its extension (the filename itself when that leaves
// nothing).
func DefaultTitle(filename string) string {
	t := strings.TrimSpace(strings.TrimSuffix(filename, path.Ext(filename)))
	if t == "" {
		t = filename
	}
	return truncateRunes(t, MaxTitleLen)
}

// Normalize checks d against the bounds and returns it in the form kept:
// text trimmed, line ends as \n, tags without repeats (compared
// case-insensitively, the first spelling kept, in the given order), no
// empty title (filename's default instead). op names the operation in an
// error.
func (d Details) Normalize(op, filename string) (Details, error) {
	var out Details
	var err error
	if out.Title, err = checkText(op, "title", d.Title, MaxTitleLen, false); err != nil {
		return Details{}, err
	}
	if out.Title == "" {
		out.Title = DefaultTitle(filename)
	}
	if out.Description, err = checkText(op, "description", d.Description, MaxDescriptionLen, true); err != nil {
		return Details{}, err
	}
	if out.Tags, err = normalizeTags(op, d.Tags); err != nil {
		return Details{}, err
	}
	if out.Metadata, err = normalizeMetadata(op, d.Metadata); err != nil {
		return Details{}, err
	}
	return out, nil
}

// IsZero reports whether d says nothing.
func (d Details) IsZero() bool {
	return d.Title == "" && d.Description == "" && len(d.Tags) == 0 && len(d.Metadata) == 0
}

// Equal reports whether d and o say the same.
func (d Details) Equal(o Details) bool {
	return d.Title == o.Title && d.Description == o.Description && slices.Equal(d.Tags, o.Tags) && maps.Equal(d.Metadata, o.Metadata)
}

// HasTag reports whether d carries tag t (case-insensitively).
func (d Details) HasTag(t string) bool {
	for _, have := range d.Tags {
		if strings.EqualFold(have, t) {
			return true
		}
	}
	return false
}

// DetailsPatch changes some of a video's details. A nil field is left as
// it is; Title "" goes back to the default title; Tags replaces the tags;
// Metadata merges key by key, a key set to "" is removed, and
// ClearMetadata removes every key first.
type DetailsPatch struct {
	Title, Description *string
	Tags               *[]string
	Metadata           map[string]string
	ClearMetadata      bool
}

// Empty reports whether p changes nothing.
func (p DetailsPatch) Empty() bool {
	return p.Title == nil && p.Description == nil && p.Tags == nil && p.Metadata == nil && !p.ClearMetadata
}

// Apply returns d changed by p (not yet normalized).
func (p DetailsPatch) Apply(d Details) Details {
	if p.Title != nil {
		d.Title = *p.Title
	}
	if p.Description != nil {
		d.Description = *p.Description
	}
	if p.Tags != nil {
		d.Tags = *p.Tags
	}
	if p.ClearMetadata || p.Metadata != nil {
		m := map[string]string{}
		if !p.ClearMetadata {
			maps.Copy(m, d.Metadata)
		}
		for k, v := range p.Metadata {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		d.Metadata = m
	}
	return d
}

// DetailsFromFields reads details from flat text fields, as a multipart
// form or tus's Upload-Metadata carry them: title, description, tags
// (repeated, or comma-separated), and metadata[<key>] for each key. Other
// fields are not its business. The result is not yet normalized.
func DetailsFromFields(fields map[string][]string) (Details, error) {
	var d Details
	one := func(name string) (string, error) {
		v := fields[name]
		if len(v) > 1 {
			return "", E("upload video", Invalid, "%s is given %d times; give it once", name, len(v))
		}
		if len(v) == 0 {
			return "", nil
		}
		return v[0], nil
	}
	var err error
	if d.Title, err = one("title"); err != nil {
		return Details{}, err
	}
	if d.Description, err = one("description"); err != nil {
		return Details{}, err
	}
	for _, v := range fields["tags"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				d.Tags = append(d.Tags, t)
			}
		}
		if len(d.Tags) > MaxTags {
			return Details{}, E("upload video", Invalid, "at most %d tags are allowed", MaxTags)
		}
	}
	for name := range fields {
		key, ok := strings.CutPrefix(name, "metadata[")
		if !ok {
			continue
		}
		key, ok = strings.CutSuffix(key, "]")
		if !ok {
			return Details{}, E("upload video", Invalid, "a metadata field is named metadata[<key>] (got %q)", Truncate(name, 60))
		}
		v, err := one(name)
		if err != nil {
			return Details{}, err
		}
		if d.Metadata == nil {
			d.Metadata = map[string]string{}
		}
		if len(d.Metadata) >= MaxMetadataKeys {
			return Details{}, E("upload video", Invalid, "at most %d metadata keys are allowed", MaxMetadataKeys)
		}
		d.Metadata[key] = v
	}
	return d, nil
}

// checkText trims s and checks it: valid UTF-8, at most max characters,
// no control characters (but line feeds and tabs where multiline), no
// bidirectional or invisible formatting characters.
func checkText(op, what, s string, max int, multiline bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", E(op, Invalid, "%s must be valid UTF-8", what)
	}
	if multiline {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > max {
		return "", E(op, Invalid, "%s must be at most %d characters (got %d)", what, max, n)
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) {
			return "", E(op, Invalid, "%s must not contain control characters (got U+%04X)", what, r)
		}
		if IsBidiControl(r) {
			return "", E(op, Invalid, "%s must not contain bidirectional formatting characters (got U+%04X)", what, r)
		}
		if IsInvisible(r) {
			return "", E(op, Invalid, "%s must not contain invisible or format characters (got U+%04X)", what, r)
		}
	}
	return s, nil
}

func normalizeTags(op string, tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, E(op, Invalid, "at most %d tags are allowed (got %d)", MaxTags, len(tags))
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range tags {
		t, err := checkText(op, "a tag", t, MaxTagLen, false)
		if err != nil {
			return nil, err
		}
		if t == "" {
			return nil, E(op, Invalid, "a tag must not be empty")
		}
		if strings.Contains(t, ",") {
			return nil, E(op, Invalid, "a tag must not contain a comma (got %q)", t)
		}
		if k := strings.ToLower(t); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out, nil
}

func normalizeMetadata(op string, m map[string]string) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	if len(m) > MaxMetadataKeys {
		return nil, E(op, Invalid, "at most %d metadata keys are allowed (got %d)", MaxMetadataKeys, len(m))
	}
	keys := slices.Collect(maps.Keys(m))
	sort.Strings(keys) // the first bad key, the same one every time
	out := make(map[string]string, len(m))
	for _, k := range keys {
		if !ValidMetadataKey(k) {
			return nil, E(op, Invalid, "a metadata key is 1 to %d of the characters A-Z a-z 0-9 _ . - (got %q)", MaxMetadataKeyLen, Truncate(k, 60))
		}
		v, err := checkText(op, fmt.Sprintf("metadata %q", k), m[k], MaxMetadataValueLen, false)
		if err != nil {
			return nil, err
		}
		if v == "" {
			return nil, E(op, Invalid, "metadata %q must not be empty (remove the key instead)", k)
		}
		out[k] = v
	}
	return out, nil
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
