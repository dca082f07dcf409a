package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/hls"
)

// PlayableMeasure is kino bench's --only name of benchPlayable, one of
// Options.More. It runs only when named: its clips take minutes to
// encode on two cores.
const PlayableMeasure = "playable"

func init() { Extra[PlayableMeasure] = benchPlayable }

// benchPlayable measures progressive publishing: upload -> playable (the
// video's playlistUrl set while PROCESSING and the first segment of its
// first variant fetched from /cdn, as a player's first request would),
// beside upload -> COMPLETED in the same run, for a 60 s and a 5-minute
// 1080p clip. It does not start a browser: the first frame in hls.js comes
// one segment download after the figure.
func benchPlayable(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
	if !slices.Contains(o.Only, PlayableMeasure) {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "kino-bench-playable-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	type clip struct {
		w, h, secs int
	}
	clips := []clip{{1920, 1080, 60}, {1920, 1080, 300}}
	runs := max(min(o.Runs, 3), 1)
	if o.Quick {
		clips, runs = []clip{{320, 180, 6}}, 1
	}
	plans := domain.DefaultPlans()
	for name, l := range plans {
		l.RequestsPerMinute, l.MaxUploadBytes = math.MaxInt32, 1<<40
		plans[name] = l
	}
	k, err := o.Start(ctx, filepath.Join(dir, "data"), plans, 1)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	if _, err := eventstore.Execute[domain.Account](ctx, k.Store(), domain.AccountStream("bench"), domain.CreateAccount{Slug: "bench", Plan: domain.PlanBusiness}); err != nil {
		return nil, err
	}
	key, _, err := accounts.IssueKey(ctx, k.Store(), "bench", "bench")
	if err != nil {
		return nil, err
	}
	client := apiclient.Client{BaseURL: k.URL() + "/v1", Key: key}
	if _, err := client.CreateCollection(ctx, "p", "Playable"); err != nil {
		return nil, err
	}

	var results []Result
	for _, c := range clips {
		src := filepath.Join(dir, fmt.Sprintf("source-%d.mp4", c.secs))
		say("playable: generating a %d s %dx%d clip", c.secs, c.w, c.h)
		gen := exec.CommandContext(ctx, "ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", c.w, c.h),
			"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", fmt.Sprint(c.secs), "-pix_fmt", "yuv420p",
			"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", src)
		if out, err := gen.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("generate clip: %v: %s", err, out)
		}
		r := Result{Measure: fmt.Sprintf("upload -> playable (first segment fetched), %d s %dp, vs upload -> COMPLETED", c.secs, c.h),
			Unit: "s", Goal: "< 6 s"}
		var listed, published []float64
		for i := range runs {
			say("playable: %d s clip, run %d of %d", c.secs, i+1, runs)
			p, err := playableRun(ctx, client, k.URL(), key, src)
			if err != nil {
				return nil, err
			}
			say("playable: %d s clip: first segments on /cdn %.2f s, playlistUrl %.2f s, first segment fetched %.2f s, COMPLETED %.2f s",
				c.secs, p.published, p.listed, p.fetched, p.completed)
			r.KinoRuns, r.BaseRuns, listed = append(r.KinoRuns, p.fetched), append(r.BaseRuns, p.completed), append(listed, p.listed)
			published = append(published, p.published)
		}
		r.Kino, r.Baseline = median(r.KinoRuns), median(r.BaseRuns)
		r.Ratio = r.Kino / r.Baseline
		r.Met = r.Kino < 6
		r.Notes = fmt.Sprintf("first segments of every rendition the master lists on /cdn after %.2f s, playlistUrl set after %.2f s (the stall rule waits for the encoder's lead; medians); the first frame in hls.js comes one segment download later",
			median(published), median(listed))
		results = append(results, r)
	}
	return results, nil
}

// playableTimes are seconds after the upload began: the first segments of
// every rendition published on /cdn (found by the master's known URL,
// before the video says so), playlistUrl set, the first segment fetched
// through it, COMPLETED.
type playableTimes struct{ published, listed, fetched, completed float64 }

// playableRun uploads src and times the moments it became playable and
// completed, polling the API every 50 ms.
func playableRun(ctx context.Context, client apiclient.Client, base, key, src string) (playableTimes, error) {
	var p playableTimes
	f, err := os.Open(src)
	if err != nil {
		return p, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return p, err
	}
	t0 := time.Now()
	up, err := client.Upload(ctx, f, fi.Size(), "source.mp4", "p", nil)
	if err != nil {
		return p, err
	}
	get := func(url string, auth bool) ([]byte, int, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return nil, 0, err
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp.StatusCode, err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(30 * time.Minute)
	for {
		b, code, err := get(base+"/v1/videos/"+up.Video.ID, true)
		if err != nil {
			return p, err
		}
		var v struct {
			Status       domain.Status `json:"status"`
			PlaylistURL  *string       `json:"playlistUrl"`
			ErrorMessage *string       `json:"errorMessage"`
		}
		if code != 200 || json.Unmarshal(b, &v) != nil {
			return p, fmt.Errorf("GET video: %d %s", code, b)
		}
		if p.published == 0 {
			if ok, err := firstSegment(base+"/cdn/"+up.Video.ID+"/hls/master.m3u8", get); err != nil {
				return p, err
			} else if ok {
				p.published = time.Since(t0).Seconds()
			}
		}
		if v.PlaylistURL != nil && p.fetched == 0 {
			if p.listed == 0 {
				p.listed = time.Since(t0).Seconds()
			}
			if ok, err := firstSegment(*v.PlaylistURL, get); err != nil {
				return p, err
			} else if ok {
				p.fetched = time.Since(t0).Seconds()
			}
		}
		switch v.Status {
		case domain.StatusCompleted:
			p.completed = time.Since(t0).Seconds()
			if p.fetched == 0 { // completed between two polls
				p.fetched, p.listed = p.completed, p.completed
			}
			if p.published == 0 {
				p.published = p.completed
			}
			return p, nil
		case domain.StatusFailed:
			return p, fmt.Errorf("video FAILED: %v", v.ErrorMessage)
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("video %s still %s after 30 minutes", up.Video.ID, v.Status)
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-tick.C:
		}
	}
}

// firstSegment fetches master, the first variant it lists and that
// variant's first segment, as a player starts; ok when all three answer 200.
func firstSegment(master string, get func(string, bool) ([]byte, int, error)) (bool, error) {
	next := master
	for range 3 {
		b, code, err := get(next, false)
		if err != nil || code != 200 {
			return false, err
		}
		if !strings.HasSuffix(next, ".m3u8") {
			return true, nil
		}
		uri := ""
		if m, err := hls.ParseMaster(b); err == nil && len(m.Variants) > 0 {
			uri = m.Variants[0].URI
		} else if pl, err := hls.ParseMedia(b); err == nil && len(pl.Segments) > 0 {
			uri = pl.Segments[0].URI
		}
		if uri == "" {
			return false, nil
		}
		next = next[:strings.LastIndex(next, "/")+1] + uri
	}
	return false, nil
}

// PlayableDescribe adds the playable measure to kino bench's help.
const PlayableDescribe = `

  playable    (only with --only playable) a 60 s and a 5-minute 1080p clip: upload -> playlistUrl
              set and the first segment fetched from /cdn, vs upload -> COMPLETED (goal < 6 s)`
