package domain

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Bounds of search.
const (
	// MaxTermLen bounds one indexed word, in characters: longer words are
	// cut (and a query's words with them, so they still match).
	MaxTermLen = 40
	// MaxVideoTerms bounds the distinct words one video is indexed under:
	// its filename's, title's and tags' words first, then its
	// description's, until the bound.
	MaxVideoTerms = 256
)

// FoldText is s as search compares it: lower case, without accents
// (decomposed, combining marks dropped), so "Café" and "CAFE" are one.
func FoldText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return norm.NFC.String(b.String())
}

// SearchTerms are the words of text as search matches them: folded,
// split at anything but letters and digits, each cut to MaxTermLen
// characters, in order, with repeats.
func SearchTerms(text string) []string {
	words := strings.FieldsFunc(FoldText(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	for i, w := range words {
		words[i] = truncateRunes(w, MaxTermLen)
	}
	return words
}

// VideoTerms are the distinct words a video is found by: those of its
// filename (without the extension), title, tags and description, at most
// MaxVideoTerms.
func VideoTerms(filename string, d Details) []string {
	seen := map[string]bool{}
	var out []string
	add := func(text string) {
		for _, w := range SearchTerms(text) {
			if len(out) == MaxVideoTerms {
				return
			}
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	add(DefaultTitle(filename))
	add(d.Title)
	for _, t := range d.Tags {
		add(t)
	}
	add(d.Description)
	return out
}
