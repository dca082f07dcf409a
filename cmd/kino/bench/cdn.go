package bench

import (
	"context"
	"math"
	"net/http"
)

// CDNStore is a kind of media store the cdn measure compares: a kino
// started with it serves one segment of SegmentSize bytes at the URL
// Options.CDN returns.
type CDNStore struct {
	Name    string // "cached", "uncached", "s3 cached", "s3 uncached", "dir"
	Kind    string // --media: "nats", "s3" or "dir"
	CacheMB int    // --media-cache-mb
}

// SegmentSize is the size of the segment the cdn measure reads.
const SegmentSize = 1536 << 10

// cdnStores are the kinos of the cdn measure: the object stores (S3 when
// a bucket is given), then the directory, the baseline.
func cdnStores(o Options) []CDNStore {
	stores := []CDNStore{{"cached", "nats", 1024}, {"uncached", "nats", 0}}
	if o.S3 {
		stores = append(stores, CDNStore{"s3 cached", "s3", 1024}, CDNStore{"s3 uncached", "s3", 0})
	}
	return append(stores, CDNStore{"dir", "dir", 0})
}

// benchCDN measures /cdn serving one 1.5 MiB segment to 8 clients from a
// kino with --media nats, with its local copies (the default) and without,
// against the same from a kino with --media dir (goal >= 0.70), in MB/s.
func benchCDN(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
	stores := cdnStores(o)
	urls := map[string]string{}
	for _, s := range stores {
		url, stop, err := o.CDN(ctx, s)
		if err != nil {
			return nil, err
		}
		defer stop()
		urls[s.Name] = url
	}
	client := loadClient(8)
	say("cdn (%d runs of %s each, object store with and without local copies, and directory)", o.Runs, o.Duration)
	runs := map[string][]float64{}
	for i := 0; i < o.Runs; i++ {
		for _, s := range stores {
			rps, _, _, err := load(ctx, client, 8, o.Duration, func(int) (*http.Request, error) { return http.NewRequest("GET", urls[s.Name], nil) })
			if err != nil {
				return nil, err
			}
			runs[s.Name] = append(runs[s.Name], math.Round(rps*SegmentSize/1e6*10)/10)
		}
	}
	var out []Result
	for _, s := range stores[:len(stores)-1] {
		r := Result{Measure: "/cdn 1.5 MiB segment, object store (" + s.Name + ") vs directory (8 clients)", Unit: "MB/s", Goal: ">= 0.70", HigherWin: true,
			KinoRuns: runs[s.Name], BaseRuns: runs["dir"]}
		r.finish(0.70)
		out = append(out, r)
	}
	out[0].Notes = "--media nats with --media-cache-mb 1024 (the default): the segment is read from NATS once, then from the local copy"
	out[1].Notes = "--media nats with --media-cache-mb 0: every read goes through NATS; see docs/performance.md"
	if o.S3 {
		out[2].Notes = "--media s3 with --media-cache-mb 1024: the segment is read from the bucket once, then from the local copy"
		out[3].Notes = "--media s3 with --media-cache-mb 0: every read is a GET of the bucket"
	}
	return out, nil
}
