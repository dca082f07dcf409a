package projections

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// searchFixture is a read-model file of random videos (two accounts, a
// small vocabulary, tags, metadata, later detail changes and deletions),
// and what the test knows of them.
type searchFixture struct {
	db     *DB
	videos map[string]*fixtureVideo // live videos by id
}

type fixtureVideo struct {
	id, account, coll, filename string
	seq                         uint64
	created                     time.Time
	status                      domain.Status
	d                           domain.Details
}

var vocabulary = []string{"talk", "talks", "taller", "Café", "cafe", "launch", "Go", "keynote", "demo", "über", "uber", "release"}

func newSearchFixture(t *testing.T, n int, seed uint64) *searchFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	db, err := OpenDB(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &searchFixture{db: db, videos: map[string]*fixtureVideo{}}
	words := func(k int) string {
		var w []string
		for range k {
			w = append(w, vocabulary[rng.IntN(len(vocabulary))])
		}
		return strings.Join(w, " ")
	}
	details := func() domain.Details {
		d := domain.Details{Title: words(1 + rng.IntN(3)), Description: words(rng.IntN(4))}
		for range rng.IntN(3) {
			d.Tags = append(d.Tags, []string{"News", "sport", "Éte", "ete"}[rng.IntN(4)])
		}
		if rng.IntN(2) == 0 {
			d.Metadata = map[string]string{"order": fmt.Sprint(rng.IntN(5))}
		}
		d, err := d.Normalize("test", "x.mp4")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var events []domain.Event
	var ids []string
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seq := uint64(0)
	add := func(id string, p domain.Payload) {
		seq++
		events = append(events, domain.Event{ID: fmt.Sprintf("E%d", seq), Type: p.EventType(), Version: 1, AggregateID: id,
			OccurredAt: base.Add(time.Duration(seq) * time.Second), Seq: seq, Data: p})
	}
	for i := range n {
		id := fmt.Sprintf("V%05d", i)
		acct := []string{"acme", "other"}[rng.IntN(2)]
		coll := []string{"a", "b"}[rng.IntN(2)]
		d := details()
		fn := words(1) + ".mp4"
		add(id, domain.UploadAccepted{Account: acct, Collection: coll, Filename: fn, OriginalSize: 1, Ext: ".mp4",
			Title: d.Title, Description: d.Description, Tags: d.Tags, Metadata: d.Metadata})
		f.videos[id] = &fixtureVideo{id: id, account: acct, coll: coll, filename: fn, seq: seq, created: events[len(events)-1].OccurredAt,
			status: domain.StatusPending, d: d}
		ids = append(ids, id)
		if rng.IntN(3) == 0 {
			add(id, domain.TranscodeStarted{Account: acct, Attempt: 1})
			f.videos[id].status = domain.StatusProcessing
		}
	}
	for _, id := range ids {
		v := f.videos[id]
		switch rng.IntN(6) {
		case 0:
			d := details()
			add(id, domain.VideoDetailsChanged{Account: v.account, Title: d.Title, Description: d.Description, Tags: d.Tags, Metadata: d.Metadata})
			v.d = d
		case 1:
			add(id, domain.VideoDeleted{Account: v.account})
			delete(f.videos, id)
		}
	}
	// Small batches, so that changes meet records already in the file.
	s := newScratch()
	for from := 0; from < len(events); from += 37 {
		batch := events[from:min(from+37, len(events))]
		if err := db.update(func(tx *bolt.Tx) error { return applyBatch(tx, batch, s) }); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// want is the query's answer worked out from what the test knows, in
// order, independently of the indexes.
func (f *searchFixture) want(account string, q VideoQuery) []string {
	var out []*fixtureVideo
	for _, v := range f.videos {
		if v.account != account || (q.Collection != "" && v.coll != q.Collection) || (q.Status != "" && v.status != q.Status) {
			continue
		}
		if !q.CreatedAfter.IsZero() && !v.created.After(q.CreatedAfter) || !q.CreatedBefore.IsZero() && !v.created.Before(q.CreatedBefore) {
			continue
		}
		terms := domain.VideoTerms(v.filename, v.d)
		ok := true
		for _, w := range q.Words {
			ok = ok && slices.Contains(terms, w)
		}
		if q.Prefix != "" {
			ok = ok && slices.ContainsFunc(terms, func(t string) bool { return strings.HasPrefix(t, q.Prefix) })
		}
		if q.Tag != "" {
			ok = ok && slices.ContainsFunc(v.d.Tags, func(t string) bool { return domain.FoldText(t) == q.Tag })
		}
		for k, val := range q.Meta {
			ok = ok && v.d.Metadata[k] == val
		}
		if ok {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b *fixtureVideo) int {
		if q.Oldest {
			return int(a.seq) - int(b.seq)
		}
		return int(b.seq) - int(a.seq)
	})
	var ids []string
	for _, v := range out {
		ids = append(ids, v.id)
	}
	return ids
}

// walk pages through q with cursors, limit videos a page.
func (f *searchFixture) walk(t *testing.T, account string, q VideoQuery, limit int) []string {
	t.Helper()
	var ids []string
	q.Limit = limit
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the cursor never ends")
		}
		page, err := f.db.QueryVideos(account, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Videos {
			if v.Account != account {
				t.Fatalf("video %s of account %s in %s's answer", v.ID, v.Account, account)
			}
			ids = append(ids, v.ID)
		}
		if page.Next == 0 {
			return ids
		}
		if len(page.Videos) != limit && maxExamine >= 100 { // short pages only past the scan budget
			t.Fatalf("a page of %d of %d with a next cursor", len(page.Videos), limit)
		}
		q.After = page.Next
	}
}

func TestQueryVideosMatchesEveryFilterAndPagesWithoutRepeatsOrGaps(t *testing.T) {
	testQueryVideos(t)
}

// With a page's scan budget of a few videos, searches for rare matches
// answer short pages with cursors, and the walks still give every match
// once. (Not parallel: it sets the budget.)
func TestQueryVideosWithinAScanBudget(t *testing.T) {
	was := maxExamine
	maxExamine = 5
	defer func() { maxExamine = was }()
	testQueryVideos(t)
}

func testQueryVideos(t *testing.T) {
	f := newSearchFixture(t, 600, 7)
	mid := time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC)
	queries := map[string]VideoQuery{
		"all":                    {},
		"oldest first":           {Oldest: true},
		"a word":                 {Words: []string{"talk"}},
		"an accent-folded word":  {Words: []string{"cafe"}},
		"two words":              {Words: []string{"talk", "launch"}},
		"a prefix":               {Prefix: "ta"},
		"a prefix of one letter": {Prefix: "u"},
		"words and a prefix":     {Words: []string{"go"}, Prefix: "rel"},
		"a tag, folded":          {Tag: "ete"},
		"a tag and a word":       {Tag: "news", Words: []string{"demo"}},
		"metadata":               {Meta: map[string]string{"order": "3"}},
		"a collection":           {Collection: "b"},
		"a status":               {Status: domain.StatusProcessing},
		"created after":          {CreatedAfter: mid},
		"created before, oldest": {CreatedBefore: mid, Oldest: true},
		"everything at once":     {Collection: "a", Prefix: "t", Tag: "sport", CreatedAfter: mid.Add(-3 * time.Minute)},
		"nothing matches":        {Words: []string{"absent"}},
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			for _, account := range []string{"acme", "other"} {
				want := f.want(account, q)
				for _, limit := range []int{1, 7, 100} {
					if got := f.walk(t, account, q, limit); !slices.Equal(got, want) {
						t.Fatalf("%s, pages of %d:\n got %v\nwant %v", account, limit, got, want)
					}
				}
				if maxExamine < 100 {
					continue // a short page's offset skips within it only
				}
				// Offsets skip matches.
				q.Limit, q.Offset = 5, 3
				page, err := f.db.QueryVideos(account, q)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, v := range page.Videos {
					got = append(got, v.ID)
				}
				if w := want[min(3, len(want)):min(8, len(want))]; !slices.Equal(got, w) {
					t.Fatalf("%s, offset 3: got %v, want %v", account, got, w)
				}
				q.Offset = 0
			}
		})
	}
}
