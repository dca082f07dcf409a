package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
)

// Bounds of a search.
const (
	maxQueryLen     = 200 // characters of q
	maxQueryWords   = 8
	maxMetaFilters  = 5
	cursorHashBytes = 8
)

// videoQuery reads GET /v1/videos's filters (all but limit and offset).
func videoQuery(q url.Values) (projections.VideoQuery, error) {
	var vq projections.VideoQuery
	var err error
	if raw, ok := q["status"]; ok {
		if vq.Status, err = domain.ParseStatus(strings.Join(raw, ",")); err != nil {
			return vq, err
		}
	}
	if _, ok := q["collection"]; ok {
		vq.Collection = q.Get("collection")
		if !domain.ValidSlug(vq.Collection) {
			return vq, errBadRequest("collection must be a collection slug matching ^[a-z0-9][a-z0-9-]{0,62}$ (got %q)", domain.Truncate(vq.Collection, 70))
		}
	}
	if _, ok := q["q"]; ok {
		text := q.Get("q")
		if !utf8.ValidString(text) {
			return vq, errBadRequest("q must be valid UTF-8")
		}
		if n := utf8.RuneCountInString(text); n > maxQueryLen {
			return vq, errBadRequest("q must be at most %d characters (got %d)", maxQueryLen, n)
		}
		words := domain.SearchTerms(text)
		if len(words) == 0 {
			return vq, errBadRequest("q has no words to search for (letters or digits)")
		}
		if len(words) > maxQueryWords {
			return vq, errBadRequest("q may have at most %d words (got %d)", maxQueryWords, len(words))
		}
		// The last word matches as a prefix while it is being typed: not
		// once a space (or other separator) follows it.
		last, _ := utf8.DecodeLastRuneInString(text)
		if unicode.IsLetter(last) || unicode.IsNumber(last) || unicode.Is(unicode.Mn, last) {
			vq.Prefix, words = words[len(words)-1], words[:len(words)-1]
		}
		vq.Words = words
	}
	if _, ok := q["tag"]; ok {
		tag := strings.TrimSpace(q.Get("tag"))
		if tag == "" || utf8.RuneCountInString(tag) > domain.MaxTagLen || !utf8.ValidString(tag) {
			return vq, errBadRequest("tag must be 1 to %d characters", domain.MaxTagLen)
		}
		vq.Tag = domain.FoldText(tag)
	}
	for name, vals := range q {
		k, ok := strings.CutPrefix(name, "metadata[")
		if !ok {
			continue
		}
		k, ok = strings.CutSuffix(k, "]")
		if !ok || !domain.ValidMetadataKey(k) {
			return vq, errBadRequest("a metadata filter is metadata[<key>]=<value> with a key of 1 to %d of A-Z a-z 0-9 _ . - (got %q)", domain.MaxMetadataKeyLen, domain.Truncate(name, 60))
		}
		if len(vals) != 1 || vals[0] == "" || utf8.RuneCountInString(vals[0]) > domain.MaxMetadataValueLen {
			return vq, errBadRequest("%s must be given once, with a value of 1 to %d characters", domain.Truncate(name, 60), domain.MaxMetadataValueLen)
		}
		if vq.Meta == nil {
			vq.Meta = map[string]string{}
		}
		if len(vq.Meta) == maxMetaFilters {
			return vq, errBadRequest("at most %d metadata filters are allowed", maxMetaFilters)
		}
		vq.Meta[k] = vals[0]
	}
	for name, at := range map[string]*time.Time{"createdAfter": &vq.CreatedAfter, "createdBefore": &vq.CreatedBefore} {
		if raw, ok := q[name]; ok {
			t, err := time.Parse(time.RFC3339Nano, strings.Join(raw, ","))
			if err != nil {
				return vq, errBadRequest("%s must be a time like 2026-11-22T12:00:00Z (got %q)", name, domain.Truncate(strings.Join(raw, ","), 40))
			}
			*at = t.UTC()
		}
	}
	if raw, ok := q["sort"]; ok {
		switch strings.Join(raw, ",") {
		case "newest":
		case "oldest":
			vq.Oldest = true
		default:
			return vq, errBadRequest(`sort must be "newest" or "oldest" (got %q)`, domain.Truncate(strings.Join(raw, ","), 40))
		}
	}
	if _, ok := q["cursor"]; ok {
		after, err := decodeCursor(q.Get("cursor"), q)
		if err != nil {
			return vq, err
		}
		vq.After = after
	}
	return vq, nil
}

// A cursor is the position after which the next page starts (the last
// video's sequence) and a hash of the query it belongs to, in base64url.
// It holds nothing secret: a forged one can only point into the caller's
// own videos, and one from another query is refused.
func encodeCursor(after uint64, q url.Values) string {
	b := binary.BigEndian.AppendUint64(nil, after)
	return base64.RawURLEncoding.EncodeToString(append(b, queryHash(q)...))
}

func decodeCursor(c string, q url.Values) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) != 8+cursorHashBytes || binary.BigEndian.Uint64(b) == 0 {
		return 0, errBadRequest("cursor is not a cursor this API gave out (use nextCursor as it was answered)")
	}
	if string(b[8:]) != string(queryHash(q)) {
		return 0, errBadRequest("cursor belongs to another query: keep every parameter but limit and cursor as they were, or start again without a cursor")
	}
	return binary.BigEndian.Uint64(b), nil
}

// queryHash digests the query's parameters that choose and order videos
// (not limit, offset, cursor, nor parameters the API ignores).
func queryHash(q url.Values) []byte {
	var names []string
	for k := range q {
		switch {
		case k == "collection", k == "status", k == "q", k == "tag", k == "createdAfter", k == "createdBefore", k == "sort",
			strings.HasPrefix(k, "metadata["):
			names = append(names, k)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, k := range names {
		for _, v := range q[k] {
			h.Write([]byte(k))
			h.Write([]byte{0})
			h.Write([]byte(v))
			h.Write([]byte{0})
		}
	}
	return h.Sum(nil)[:cursorHashBytes]
}
