package projections

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// indexDetails adds (add) or removes v's entries under details d in the
// search indexes: one per word (domain.VideoTerms), per tag (folded) and
// per metadata pair.
func (s *scratch) indexDetails(v *Video, d domain.Details, add bool) {
	op := func(bucket, k []byte) {
		if add {
			s.w.put(bucket, k, s.key(v.ID))
		} else {
			s.w.del(bucket, k)
		}
	}
	for _, t := range domain.VideoTerms(v.Filename, d) {
		op(bSearch, s.seqKey(v.CreatedSeq, v.Account, t))
	}
	for _, t := range d.Tags {
		op(bByTag, s.seqKey(v.CreatedSeq, v.Account, domain.FoldText(t)))
	}
	for k, val := range d.Metadata {
		op(bByMeta, s.seqKey(v.CreatedSeq, v.Account, k, val))
	}
}

// VideoQuery selects and orders videos of one account: every filter
// given must match.
type VideoQuery struct {
	Collection string        // "" for all
	Status     domain.Status // "" for all
	// Words must each be a word of the video (domain.SearchTerms, folded);
	// Prefix, when set, must begin one of its words.
	Words  []string
	Prefix string
	Tag    string            // a tag of the video (compared folded)
	Meta   map[string]string // metadata pairs the video has
	// CreatedAfter and CreatedBefore bound createdAt (zero: no bound).
	CreatedAfter, CreatedBefore time.Time
	Oldest                      bool   // oldest first (default newest first)
	After                       uint64 // a cursor: continue after the video of this sequence (0: from the start)
	Offset                      int    // matches skipped first
	Limit                       int
}

// VideoPage is one page of a query: its videos, and Next, the cursor of
// the page after it (the last video's sequence; 0 when there is none).
type VideoPage struct {
	Videos []Video
	Next   uint64
}

// maxPrefixTerms bounds how many indexed words one prefix may expand to;
// past it the prefix matches as a whole word only.
const maxPrefixTerms = 1000

// maxExamine bounds the videos one page examines: a search whose matches
// are rare among the list it walks answers after this many with the
// matches found so far and a cursor to go on from, so one account's
// search never holds the read models for long. A variable for the tests.
var maxExamine = 10_000

// createdSlack is how far createdAt may run against the stream's order
// (clocks of nodes in a cluster): a scan in stream order stops that far
// past a createdAt bound.
const createdSlack = time.Minute

// QueryVideos answers q for account, walking the most selective index
// the query names (a tag, a metadata pair, the longest word, the prefix,
// the collection, the status, else all of the account's videos) in stream
// order and checking every other filter on the record; the cost of a page
// is its length, not its depth (a cursor seeks straight to its place).
// A page examines at most maxExamine videos: past that it holds fewer
// than q.Limit and Next continues after the last one examined.
func (db *DB) QueryVideos(account string, q VideoQuery) (VideoPage, error) {
	page := VideoPage{Videos: []Video{}}
	err := db.view(func(tx *bolt.Tx) error {
		src, driver := pickSource(tx, account, q)
		// The index walked holds the driving word: only the others are
		// checked on the record.
		q.Words = slices.DeleteFunc(slices.Clone(q.Words), func(w string) bool { return w == driver })
		videos := tx.Bucket(bVideos)
		skip := q.Offset
		for examined := 0; ; examined++ {
			seq, id, ok := src.next()
			if !ok {
				return nil
			}
			if examined == maxExamine && len(page.Videos) < q.Limit {
				// Go on from this one, not examined yet.
				page.Next = seq + 1
				if q.Oldest {
					page.Next = seq - 1
				}
				return nil
			}
			v, found, err := getJSON[Video](videos, id)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			if stop := pastCreated(v, q); stop {
				return nil
			}
			if !matches(v, q) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if len(page.Videos) == q.Limit {
				page.Next = page.Videos[len(page.Videos)-1].CreatedSeq
				return nil
			}
			page.Videos = append(page.Videos, v)
		}
	})
	return page, err
}

// pastCreated reports whether a scan in stream order has gone past q's
// createdAt bound in its direction (with createdSlack).
func pastCreated(v Video, q VideoQuery) bool {
	if q.Oldest {
		return !q.CreatedBefore.IsZero() && v.CreatedAt.After(q.CreatedBefore.Add(createdSlack))
	}
	return !q.CreatedAfter.IsZero() && v.CreatedAt.Before(q.CreatedAfter.Add(-createdSlack))
}

// matches checks every filter of q on v.
func matches(v Video, q VideoQuery) bool {
	if q.Collection != "" && v.Collection != q.Collection {
		return false
	}
	if q.Status != "" && v.Status != q.Status {
		return false
	}
	if !q.CreatedAfter.IsZero() && !v.CreatedAt.After(q.CreatedAfter) {
		return false
	}
	if !q.CreatedBefore.IsZero() && !v.CreatedAt.Before(q.CreatedBefore) {
		return false
	}
	d := v.Details()
	if q.Tag != "" {
		found := false
		for _, t := range d.Tags {
			if domain.FoldText(t) == q.Tag {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for k, val := range q.Meta {
		if d.Metadata[k] != val {
			return false
		}
	}
	if len(q.Words) == 0 && q.Prefix == "" {
		return true
	}
	terms := domain.VideoTerms(v.Filename, d)
	for _, w := range q.Words {
		if !containsTerm(terms, w) {
			return false
		}
	}
	if q.Prefix != "" {
		for _, t := range terms {
			if strings.HasPrefix(t, q.Prefix) {
				return true
			}
		}
		return false
	}
	return true
}

func containsTerm(terms []string, w string) bool {
	for _, t := range terms {
		if t == w {
			return true
		}
	}
	return false
}

// postings yields an index's entries in stream order: each video's
// sequence and id.
type postings interface {
	next() (seq uint64, id []byte, ok bool)
}

// pickSource chooses the index that q walks, and the word every entry of
// it holds ("" when it is not a word's list).
func pickSource(tx *bolt.Tx, account string, q VideoQuery) (postings, string) {
	switch {
	case q.Tag != "":
		return newRange(tx.Bucket(bByTag), key(account, q.Tag), q), ""
	case len(q.Meta) > 0:
		for k, v := range q.Meta { // any pair: each is an exact list
			return newRange(tx.Bucket(bByMeta), key(account, k, v), q), ""
		}
	case len(q.Words) > 0:
		longest := q.Words[0] // longer words are rarer
		for _, w := range q.Words[1:] {
			if len([]rune(w)) > len([]rune(longest)) {
				longest = w
			}
		}
		return newRange(tx.Bucket(bSearch), key(account, longest), q), longest
	case q.Prefix != "":
		if m := newPrefixMerge(tx.Bucket(bSearch), account, q); m != nil {
			return m, ""
		}
		return newRange(tx.Bucket(bSearch), key(account, q.Prefix), q), ""
	case q.Collection != "":
		return newRange(tx.Bucket(bByColl), key(account, q.Collection), q), ""
	case q.Status != "":
		return newRange(tx.Bucket(bByStatus), key(account, string(q.Status)), q), ""
	}
	return newRange(tx.Bucket(bByAccount), key(account), q), ""
}

// rangeScan walks the entries prefix 0 <seq> of one index in q's order,
// from after q's cursor.
type rangeScan struct {
	c       *bolt.Cursor
	prefix  []byte // with its 0
	oldest  bool
	started bool
	from    []byte // the first key to look at
}

func newRange(b *bolt.Bucket, prefix []byte, q VideoQuery) *rangeScan {
	p := append(prefix, 0)
	r := &rangeScan{c: b.Cursor(), prefix: p, oldest: q.Oldest}
	switch {
	case q.After == 0 && q.Oldest:
		r.from = p
	case q.After == 0:
		r.from = seqBound(p, ^uint64(0))
	case q.Oldest:
		r.from = seqBound(p, q.After+1)
	default:
		r.from = seqBound(p, q.After-1)
	}
	return r
}

func seqBound(prefix []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(prefix), seq)
}

func (r *rangeScan) next() (uint64, []byte, bool) {
	var k, v []byte
	switch {
	case r.started && r.oldest:
		k, v = r.c.Next()
	case r.started:
		k, v = r.c.Prev()
	case r.oldest:
		k, v = r.c.Seek(r.from)
	default:
		// The last key at or before from: seek, then step back unless it
		// landed on from itself.
		k, v = r.c.Seek(r.from)
		if k == nil {
			k, v = r.c.Last()
		} else if !bytes.Equal(k, r.from) {
			k, v = r.c.Prev()
		}
	}
	r.started = true
	if k == nil || !bytes.HasPrefix(k, r.prefix) || len(k) != len(r.prefix)+8 {
		return 0, nil, false
	}
	return binary.BigEndian.Uint64(k[len(r.prefix):]), v, true
}

// prefixMerge merges the entries of every word that begins with a prefix,
// in q's order: one rangeScan per word, a heap on their heads.
type prefixMerge struct {
	heads  []head
	oldest bool
	last   uint64 // the sequence given last: a video under two such words comes once
	given  bool
}

type head struct {
	seq uint64
	id  []byte
	r   *rangeScan
}

// newPrefixMerge is nil when the prefix begins more than maxPrefixTerms
// words.
func newPrefixMerge(b *bolt.Bucket, account string, q VideoQuery) *prefixMerge {
	base := append(key(account), 0)
	start := append(bytes.Clone(base), q.Prefix...)
	m := &prefixMerge{oldest: q.Oldest}
	c := b.Cursor()
	for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, start); k, _ = c.Seek(append(bytes.Clone(k[:len(k)-9]), 1)) {
		if len(k) < len(base)+9 {
			break
		}
		word := k[len(base) : len(k)-9] // account 0 word 0 seq
		if len(m.heads) == maxPrefixTerms {
			return nil
		}
		r := newRange(b, append(bytes.Clone(base), word...), q)
		if seq, id, ok := r.next(); ok {
			m.heads = append(m.heads, head{seq, id, r})
		}
	}
	heap.Init(m)
	return m
}

func (m *prefixMerge) Len() int { return len(m.heads) }
func (m *prefixMerge) Less(i, j int) bool {
	if m.oldest {
		return m.heads[i].seq < m.heads[j].seq
	}
	return m.heads[i].seq > m.heads[j].seq
}
func (m *prefixMerge) Swap(i, j int) { m.heads[i], m.heads[j] = m.heads[j], m.heads[i] }
func (m *prefixMerge) Push(x any)    { m.heads = append(m.heads, x.(head)) }
func (m *prefixMerge) Pop() any {
	h := m.heads[len(m.heads)-1]
	m.heads = m.heads[:len(m.heads)-1]
	return h
}

func (m *prefixMerge) next() (uint64, []byte, bool) {
	for len(m.heads) > 0 {
		h := m.heads[0]
		if seq, id, ok := h.r.next(); ok {
			m.heads[0] = head{seq, id, h.r}
			heap.Fix(m, 0)
		} else {
			heap.Pop(m)
		}
		if m.given && h.seq == m.last {
			continue
		}
		m.last, m.given = h.seq, true
		return h.seq, h.id, true
	}
	return 0, nil, false
}
