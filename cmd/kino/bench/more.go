package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/benchstore"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/ffmpeg"
)

// finishLower is finish for measures where lower is better (times).
func (r *Result) finishLower(goal float64) {
	r.Kino, r.Baseline = median(r.KinoRuns), median(r.BaseRuns)
	if r.Baseline > 0 {
		r.Ratio = r.Kino / r.Baseline
	}
	r.Met = r.Ratio > 0 && r.Ratio <= goal
}

// benchProcessing times upload -> COMPLETED through a kino with one
// transcoder, beside the same ffmpeg commands run bare (as kino schedules
// them) and one ffmpeg per rendition in sequence.
func benchProcessing(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
	dir, err := os.MkdirTemp("", "kino-bench-processing-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	w, h, secs := 1920, 1080, 30
	if o.Quick {
		w, h, secs = 320, 180, 2
	}
	src := filepath.Join(dir, "source.mp4")
	say("processing: generating a %d s %dx%d clip", secs, w, h)
	gen := exec.CommandContext(ctx, "ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", w, h),
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", fmt.Sprint(secs), "-pix_fmt", "yuv420p",
		"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", src)
	if out, err := gen.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("generate clip: %v: %s", err, out)
	}
	in, err := ffmpeg.OpenInput(src, "")
	if err != nil {
		return nil, err
	}
	info, err := ffmpeg.Probe(ctx, in, ffmpeg.ProbeOptions{})
	if err != nil {
		return nil, err
	}
	rungs := ffmpeg.Ladder(info)

	m, key, err := startBenchKino(ctx, o, filepath.Join(dir, "data"), 1)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	api := apiOf(m, key)
	if code, _, err := api.call(ctx, "POST", "/v1/collections", `{"slug":"p","name":"Processing"}`); err != nil || code != 201 {
		return nil, fmt.Errorf("create collection: %d %v", code, err)
	}
	client := apiclient.Client{BaseURL: m.URL() + "/v1", Key: key}

	hls := func(out string, rs []ffmpeg.Rung) error {
		return ffmpeg.Run(ctx, ffmpeg.HLSArgs(in, out, info, rs), ffmpeg.RunOptions{Duration: info.Duration})
	}
	low := rungs[len(rungs)-1]
	sb := ffmpeg.PlanStoryboard(info, low.Width, low.Height)
	stills := func(out string) error { // kino's one pass for the thumbnail, previews and storyboard tiles, then the sprite
		args := ffmpeg.StillsArgs(in, info, ffmpeg.ThumbnailAt(info, nil),
			filepath.Join(out, "thumbnail.jpg"), filepath.Join(out, "preview.mp4"), filepath.Join(out, "preview.webp"), sb, out)
		if err := ffmpeg.Run(ctx, args, ffmpeg.RunOptions{Duration: info.Duration}); err != nil {
			return err
		}
		return sb.Assemble(out, filepath.Join(out, "storyboard.jpg"))
	}
	same := Result{Measure: fmt.Sprintf("upload -> COMPLETED, %d s %dp, vs the same ffmpeg commands bare", secs, h), Unit: "s", Goal: "<= 1.05"}
	naive := Result{Measure: fmt.Sprintf("upload -> COMPLETED, %d s %dp, vs one ffmpeg per rendition", secs, h), Unit: "s", Goal: "<= 0.80"}
	lanes := Result{Measure: fmt.Sprintf("the ladder in lanes vs in one process, %d s %dp, bare", secs, h), Unit: "s", Goal: "<= 1.10"}
	for i := 0; i < o.Runs; i++ {
		say("processing: run %d of %d", i+1, o.Runs)
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		fi, _ := f.Stat()
		t0 := time.Now()
		up, err := client.Upload(ctx, f, fi.Size(), "source.mp4", "p", nil)
		f.Close()
		if err != nil {
			return nil, err
		}
		if _, err := client.Wait(ctx, up.Video.ID, apiclient.WaitOptions{Interval: 50 * time.Millisecond}); err != nil {
			return nil, err
		}
		took := time.Since(t0).Seconds()
		same.KinoRuns, naive.KinoRuns = append(same.KinoRuns, took), append(naive.KinoRuns, took)

		out := filepath.Join(dir, fmt.Sprintf("bare-%d", i))
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, err
		}
		t0 = time.Now()
		var wg sync.WaitGroup
		var stillErr error
		wg.Add(1)
		go func() { defer wg.Done(); stillErr = stills(out) }()
		err = ladderAsKino(ctx, in, info, rungs, out)
		wg.Wait()
		if err = firstErr(err, stillErr); err != nil {
			return nil, err
		}
		same.BaseRuns = append(same.BaseRuns, time.Since(t0).Seconds())

		// What the lanes cost: the ladder alone, split as kino splits it,
		// against one process.
		for k, split := range []bool{false, true} {
			out := filepath.Join(dir, fmt.Sprintf("lanes-%d-%d", i, k))
			t0 = time.Now()
			if split {
				err = lanesAsKino(ctx, in, info, rungs, ffmpeg.Extras{}, out)
			} else {
				err = ffmpeg.Run(ctx, ffmpeg.LadderArgs(in, out, info, rungs, ffmpeg.Extras{}), ffmpeg.RunOptions{Duration: info.Duration})
			}
			if err != nil {
				return nil, err
			}
			if split {
				lanes.KinoRuns = append(lanes.KinoRuns, time.Since(t0).Seconds())
			} else {
				lanes.BaseRuns = append(lanes.BaseRuns, time.Since(t0).Seconds())
			}
			_ = os.RemoveAll(out)
		}

		out = filepath.Join(dir, fmt.Sprintf("naive-%d", i))
		t0 = time.Now()
		for _, r := range rungs {
			if err := hls(filepath.Join(out, r.Name), []ffmpeg.Rung{r}); err != nil {
				return nil, err
			}
		}
		if err := stills(out); err != nil {
			return nil, err
		}
		// The same outputs as kino's: each rung's directory holds its own
		// audio rendition, from which the download is remuxed.
		dl, _ := ffmpeg.DownloadRung(rungs)
		if err := download(ctx, info, rungs, out, filepath.Join(out, dl.Name)); err != nil {
			return nil, err
		}
		naive.BaseRuns = append(naive.BaseRuns, time.Since(t0).Seconds())
		_ = client.DeleteVideo(ctx, up.Video.ID)
		_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("bare-%d", i)))
		_ = os.RemoveAll(out)
	}
	same.finishLower(1.05)
	naive.finishLower(0.80)
	lanes.finishLower(1.10)
	same.Notes = fmt.Sprintf("ladder %s; kino polls every 50 ms", rungNames(rungs))
	if k := ffmpeg.SplitLadder(info, rungs, ffmpeg.Extras{}); k > 0 {
		lanes.Notes = fmt.Sprintf("lanes %s (niced %d) and %s", rungNames(rungs[:k]), ffmpeg.HighLaneNice, rungNames(rungs[k:]))
	} else {
		lanes.Notes = "not split: the ladder runs as one process either way"
	}
	return []Result{same, naive, lanes}, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func rungNames(rs []ffmpeg.Rung) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	return strings.Join(names, "/")
}

// benchReplay rebuilds the read models from synthetic streams of several
// sizes (each in its own embedded server) beside a raw ordered consumer
// writing the same messages into bbolt, and reports how the rebuild time
// grows with the stream.
func benchReplay(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
	sizes := []int{250_000, 500_000, 1_000_000}
	if o.Quick {
		sizes = []int{2_000, 4_000, 8_000}
	}
	var out []Result
	var times []float64
	for _, n := range sizes {
		dir, err := os.MkdirTemp("", "kino-bench-replay-")
		if err != nil {
			return nil, err
		}
		r, secs, err := replayOnce(ctx, dir, n, o.Runs, say)
		os.RemoveAll(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
		times = append(times, secs)
	}
	// Linear growth: time per event at the largest size over the smallest.
	growth := (times[len(times)-1] / float64(sizes[len(sizes)-1])) / (times[0] / float64(sizes[0]))
	out = append(out, Result{Measure: fmt.Sprintf("rebuild time per event, %d vs %d events", sizes[len(sizes)-1], sizes[0]),
		Unit: "x", Kino: growth, Baseline: 1, Ratio: growth, Goal: "<= 1.25 (linear)", Met: growth <= 1.25,
		Notes: fmt.Sprintf("rebuild times %s s", joinFloats(times))})
	return out, nil
}

func replayOnce(ctx context.Context, dir string, n, runs int, say func(string, ...any)) (Result, float64, error) {
	srv, err := natsserver.StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		return Result{}, 0, err
	}
	defer srv.Shutdown()
	s, err := eventstore.Open(ctx, eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleServe), Name: "kino bench", Manage: true})
	if err != nil {
		return Result{}, 0, err
	}
	defer s.Close()
	say("replay: importing %d synthetic events", n)
	if err := benchstore.Import(ctx, s, benchstore.Synthetic(n)); err != nil {
		return Result{}, 0, err
	}
	r := Result{Measure: fmt.Sprintf("rebuild of %d events", n), Unit: "events/s", Goal: ">= 0.70", HigherWin: true}
	var secs []float64
	for i := 0; i < runs; i++ {
		path := filepath.Join(dir, fmt.Sprintf("p-%d.db", i))
		t0 := time.Now()
		side, _, err := projections.BuildSide(ctx, s, path, func(projections.Progress) {})
		if err != nil {
			return r, 0, err
		}
		took := time.Since(t0).Seconds()
		side.Discard()
		secs = append(secs, took)
		r.KinoRuns = append(r.KinoRuns, float64(n)/took)
		raw := filepath.Join(dir, fmt.Sprintf("raw-%d.db", i))
		t0 = time.Now()
		if err := benchstore.RawIntoBolt(ctx, s, raw, uint64(n)); err != nil {
			return r, 0, err
		}
		r.BaseRuns = append(r.BaseRuns, float64(n)/time.Since(t0).Seconds())
		_ = os.Remove(raw)
	}
	r.finish(0.70)
	return r, median(secs), nil
}

func joinFloats(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(parts, ", ")
}

// ladderAsKino runs the ladder as kino's transcoder does for an upload
// with the default settings: the fast path when the source takes it, then
// the download remux (the storyboard's tiles come from the stills' pass).
func ladderAsKino(ctx context.Context, in ffmpeg.Input, info ffmpeg.Info, rungs []ffmpeg.Rung, out string) error {
	fast, _ := ffmpeg.DecideFastPath(ctx, in, info, rungs[0], ffmpeg.Jail{}) // a failed estimate: no fast path, as in kino
	x := ffmpeg.Extras{Fast: fast}
	rungs = x.Fast.Rungs(rungs)
	if err := lanesAsKino(ctx, in, info, rungs, x, filepath.Join(out, "hls")); err != nil {
		return err
	}
	return download(ctx, info, rungs, out, filepath.Join(out, "hls"))
}

// download remuxes the download from the rung's HLS under hls into out,
// as kino does after the ladder.
func download(ctx context.Context, info ffmpeg.Info, rungs []ffmpeg.Rung, out, hls string) error {
	dl, _ := ffmpeg.DownloadRung(rungs)
	return ffmpeg.Run(ctx, ffmpeg.DownloadArgs(hls, dl, info.HasAudio, filepath.Join(out, "download.mp4")), ffmpeg.RunOptions{Duration: info.Duration})
}

// lanesAsKino runs the ladder as kino does: one process, or two lanes at
// once (the high lane niced) whose masters are then merged.
func lanesAsKino(ctx context.Context, in ffmpeg.Input, info ffmpeg.Info, rungs []ffmpeg.Rung, x ffmpeg.Extras, hls string) error {
	split := ffmpeg.SplitLadder(info, rungs, x)
	if split == 0 {
		return ffmpeg.Run(ctx, ffmpeg.LadderArgs(in, hls, info, rungs, x), ffmpeg.RunOptions{Duration: info.Duration})
	}
	high := x
	high.Lane = ffmpeg.SecondLane
	var highErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		highErr = ffmpeg.Run(ctx, ffmpeg.LadderArgs(in, hls, info, rungs[:split], high),
			ffmpeg.RunOptions{Duration: info.Duration, Jail: ffmpeg.Jail{Nice: ffmpeg.HighLaneNice}})
	}()
	err := ffmpeg.Run(ctx, ffmpeg.LadderArgs(in, hls, info, rungs[split:], x), ffmpeg.RunOptions{Duration: info.Duration})
	wg.Wait()
	if err = firstErr(err, highErr); err != nil {
		return err
	}
	low, err := os.ReadFile(filepath.Join(hls, "master.m3u8"))
	if err != nil {
		return err
	}
	highMaster, err := os.ReadFile(filepath.Join(hls, ffmpeg.LaneMaster(ffmpeg.SecondLane)))
	if err != nil {
		return err
	}
	merged, err := ffmpeg.MergeMasters(low, highMaster)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(hls, "master.m3u8"), merged, 0o644)
}
