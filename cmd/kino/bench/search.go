package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
)

// benchSearch seeds n videos into one account of m (their UploadAccepted
// appended directly, as n uploads would leave them), walks every one of
// them by cursor through the API, failing on a repeat or a gap, and
// reports the p99 of a q search and of a cursor page at depth 1,000
// beside the offset page at the same depth (the interface's paging).
func benchSearch(ctx context.Context, m Kino, key string, o Options, say func(string, ...any)) ([]Result, error) {
	n, samples := 100_000, 300
	if o.Quick {
		n, samples = 2_000, 40
	}
	api := apiOf(m, key)
	if code, _, err := api.call(ctx, "POST", "/v1/collections", `{"slug":"search","name":"Search"}`); err != nil || code != 201 {
		return nil, fmt.Errorf("create collection: %d %v", code, err)
	}
	say("search: seeding %d videos in one account", n)
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%c%c%d", 'a'+rune(i%26), 'a'+rune(i/26%26), i)
	}
	var next sync.Mutex
	i := 0
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					errs <- nil
					return
				}
				title := vocab[k%len(vocab)] + " " + vocab[(k*7)%len(vocab)] + " " + vocab[(k*13)%len(vocab)]
				_, err := m.Store().Record(ctx, domain.StreamID{Aggregate: domain.AggVideo, ID: m.Store().NewID()}, domain.UploadAccepted{
					Account: "bench", Collection: "search", CollectionName: "Search", Filename: "clip.mp4", OriginalSize: 1, Ext: ".mp4",
					Title: title, Tags: []string{fmt.Sprint("tag", k%50)}, Metadata: map[string]string{"order_id": fmt.Sprint(k)},
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	if err := m.CatchUp(ctx); err != nil {
		return nil, err
	}

	say("search: walking them by cursor, 100 a page")
	seen := make(map[string]bool, n)
	var depth1000 string
	cursor, pages := "", 0
	for {
		path := "/v1/videos?collection=search&limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		code, body, err := api.call(ctx, "GET", path, "")
		if err != nil || code != 200 {
			return nil, fmt.Errorf("page %d: %d %v", pages+1, code, err)
		}
		var page struct {
			Videos []struct {
				ID string `json:"id"`
			} `json:"videos"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		for _, v := range page.Videos {
			if seen[v.ID] {
				return nil, fmt.Errorf("the cursor walk repeated video %s on page %d", v.ID, pages+1)
			}
			seen[v.ID] = true
		}
		pages++
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		if pages == 10 {
			depth1000 = cursor
		}
	}
	if len(seen) != n {
		return nil, fmt.Errorf("the cursor walk saw %d of %d videos", len(seen), n)
	}

	p99 := func(path string) (float64, error) {
		lat := make([]float64, 0, samples)
		for range samples {
			start := time.Now()
			code, _, err := api.call(ctx, "GET", path, "")
			if err != nil || code != 200 {
				return 0, fmt.Errorf("%s: %d %v", path, code, err)
			}
			lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		}
		slices.Sort(lat)
		return lat[len(lat)*99/100], nil
	}
	// A search that finds: the first word of one video's title and the
	// start of its second, as someone typing it.
	k := n / 4
	query := vocab[k%len(vocab)] + " " + vocab[(k*7)%len(vocab)][:3]
	if code, body, err := api.call(ctx, "GET", "/v1/videos?limit=50&q="+url.QueryEscape(query), ""); err != nil || code != 200 || !json.Valid(body) || len(body) < 100 {
		return nil, fmt.Errorf("the search %q found nothing: %d %v", query, code, err)
	}
	say("search: %d requests each of a q search, a cursor page and an offset page", samples)
	offset, err := p99("/v1/videos?collection=search&limit=50&offset=1000")
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, c := range []struct{ name, path string }{
		{fmt.Sprintf("GET /v1/videos?q=<word prefix> (%d videos in one account)", n), "/v1/videos?limit=50&q=" + url.QueryEscape(query)},
		{fmt.Sprintf("GET /v1/videos?cursor= at depth 1,000 (%d videos)", n), "/v1/videos?collection=search&limit=50&cursor=" + url.QueryEscape(depth1000)},
	} {
		ms, err := p99(c.path)
		if err != nil {
			return nil, err
		}
		r := Result{Measure: c.name, Unit: "p99 ms", Kino: ms, Baseline: offset, Goal: "p99 < 20 ms", Met: ms < 20,
			KinoRuns: []float64{ms}, BaseRuns: []float64{offset},
			Notes: fmt.Sprintf("baseline: the offset=1000 page; the cursor walked all %d videos in %d pages, none repeated or missed", n, pages)}
		if offset > 0 {
			r.Ratio = ms / offset
		}
		out = append(out, r)
	}
	return out, nil
}
