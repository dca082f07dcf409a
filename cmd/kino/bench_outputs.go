package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kino-video/kino/cmd/kino/bench"
	"github.com/kino-video/kino/transport/ffmpeg"
)

// benchMore are kino bench's measures of the optional outputs and the
// fast path (issue 14), beside the bench package's own.
var benchMore = map[string]bench.Measure{"outputs": benchOutputs, "fastpath": benchFastPath}

// benchClip writes a testsrc2 clip with a 48 kHz tone, H.264 + AAC made
// with the x264 options given, and probes it.
func benchClip(ctx context.Context, dir, name string, o bench.Options, x264 ...string) (ffmpeg.Input, ffmpeg.Info, error) {
	w, h, secs := 1920, 1080, 20
	if o.Quick {
		w, h, secs = 320, 180, 2
	}
	src := filepath.Join(dir, name)
	args := []string{"-loglevel", "error", "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", w, h),
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", fmt.Sprint(secs),
		"-c:v", "libx264", "-pix_fmt", "yuv420p"}
	args = append(append(args, x264...), "-c:a", "aac", "-ac", "2", src)
	if out, err := exec.CommandContext(ctx, "ffmpeg", args...).CombinedOutput(); err != nil {
		return ffmpeg.Input{}, ffmpeg.Info{}, fmt.Errorf("generate clip: %v: %s", err, out)
	}
	in, err := ffmpeg.OpenInput(src, "")
	if err != nil {
		return in, ffmpeg.Info{}, err
	}
	info, err := ffmpeg.Probe(ctx, in, ffmpeg.ProbeOptions{Bounds: ffmpeg.DefaultBounds()})
	return in, info, err
}

// timed runs f in a fresh directory under dir and returns its seconds.
func timed(dir string, f func(out string) error) (float64, error) {
	out, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(out)
	t0 := time.Now()
	err = f(out)
	return time.Since(t0).Seconds(), err
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func finish(r *bench.Result, goal float64) {
	r.Kino, r.Baseline = medianOf(r.KinoRuns), medianOf(r.BaseRuns)
	if r.Baseline > 0 {
		r.Ratio = r.Kino / r.Baseline
	}
	r.Met = r.Ratio > 0 && (goal <= 0 || r.Ratio <= goal)
}

// benchOutputs times the ladder alone, the ladder with the storyboard as
// a branch of its pass, the storyboard as a second pass, and the download
// remux after the ladder, on a clip the fast path does not take (as most
// uploads): the cost of the storyboard and the download as a ratio of the
// ladder's time, each way.
func benchOutputs(ctx context.Context, o bench.Options, say func(string, ...any)) ([]bench.Result, error) {
	dir, err := os.MkdirTemp("", "kino-bench-outputs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	say("outputs: generating the clip")
	in, info, err := benchClip(ctx, dir, "source.mp4", o, "-preset", "ultrafast")
	if err != nil {
		return nil, err
	}
	rungs := ffmpeg.Ladder(info)
	low := rungs[len(rungs)-1]
	sb := ffmpeg.PlanStoryboard(info, low.Width, low.Height)
	dlRung, _ := ffmpeg.DownloadRung(rungs)
	run := func(args []string) error { return ffmpeg.Run(ctx, args, ffmpeg.RunOptions{Duration: info.Length()}) }
	ladder := func(out string, x ffmpeg.Extras) error {
		return run(ffmpeg.LadderArgs(in, filepath.Join(out, "hls"), info, rungs, x))
	}
	download := func(out string) error {
		return run(ffmpeg.DownloadArgs(filepath.Join(out, "hls"), dlRung, info.HasAudio, filepath.Join(out, "download.mp4")))
	}
	clip := fmt.Sprintf("%.0f s %dp, ladder %s", info.Length(), min(info.Width, info.Height), rungNamesOf(rungs))
	same := bench.Result{Measure: "ladder + storyboard (same pass) + download, vs the ladder", Unit: "s", Goal: "<= 1.10"}
	second := bench.Result{Measure: "ladder + storyboard (second pass) + download, vs the ladder", Unit: "s", Goal: "<= 1.10"}
	var sbSame, sbSecond, dl []float64
	for i := 0; i < o.Runs; i++ {
		say("outputs: run %d of %d", i+1, o.Runs)
		base, err := timed(dir, func(out string) error { return ladder(out, ffmpeg.Extras{}) })
		if err != nil {
			return nil, err
		}
		var tLadder, tDownload float64
		withSB, err := timed(dir, func(out string) error {
			t0 := time.Now()
			if err := ladder(out, ffmpeg.Extras{Storyboard: sb, StoryboardFile: filepath.Join(out, "storyboard.jpg")}); err != nil {
				return err
			}
			tLadder = time.Since(t0).Seconds()
			t0 = time.Now()
			err := download(out)
			tDownload = time.Since(t0).Seconds()
			return err
		})
		if err != nil {
			return nil, err
		}
		pass, err := timed(dir, func(out string) error {
			return run(ffmpeg.StoryboardArgs(in, filepath.Join(out, "storyboard.jpg"), info, sb))
		})
		if err != nil {
			return nil, err
		}
		same.BaseRuns, second.BaseRuns = append(same.BaseRuns, base), append(second.BaseRuns, base)
		same.KinoRuns = append(same.KinoRuns, withSB)
		second.KinoRuns = append(second.KinoRuns, base+pass+tDownload)
		sbSame, sbSecond, dl = append(sbSame, tLadder-base), append(sbSecond, pass), append(dl, tDownload)
	}
	finish(&same, 1.10)
	finish(&second, 1.10)
	same.Notes = fmt.Sprintf("%s; storyboard %d tiles; median extra time of the storyboard branch %.2f s, download remux %.2f s",
		clip, sb.Count, medianOf(sbSame), medianOf(dl))
	second.Notes = fmt.Sprintf("%s; the second pass alone %.2f s (run after the ladder, as kino would)", clip, medianOf(sbSecond))
	return []bench.Result{same, second}, nil
}

// benchFastPath times the ladder of an H.264/AAC source the fast path
// takes (the top rung's size, within its cap) with its top rung copied,
// its keyframes checked first, against the same ladder fully encoded.
func benchFastPath(ctx context.Context, o bench.Options, say func(string, ...any)) ([]bench.Result, error) {
	dir, err := os.MkdirTemp("", "kino-bench-fastpath-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	say("fastpath: generating the clip")
	rate := "4000k"
	if o.Quick {
		rate = "300k"
	}
	in, info, err := benchClip(ctx, dir, "source.mp4", o, "-preset", "veryfast", "-g", "50",
		"-b:v", rate, "-maxrate", rate, "-bufsize", rate)
	if err != nil {
		return nil, err
	}
	rungs := ffmpeg.Ladder(info)
	fast := ffmpeg.ChooseFastPath(info, rungs[0])
	if !fast.Video {
		return nil, fmt.Errorf("the fast path does not take the clip: %s", fast.Why)
	}
	r := bench.Result{Measure: "ladder with the top rung copied (fast path), vs fully encoded", Unit: "s", Goal: "< 1 (lower is faster)"}
	for i := 0; i < o.Runs; i++ {
		say("fastpath: run %d of %d", i+1, o.Runs)
		for _, c := range []struct {
			x    ffmpeg.Extras
			runs *[]float64
		}{{ffmpeg.Extras{Fast: fast}, &r.KinoRuns}, {ffmpeg.Extras{}, &r.BaseRuns}} {
			took, err := timed(dir, func(out string) error {
				if c.x.Fast.Video { // as the transcoder does before it copies
					if err := ffmpeg.CheckKeyframes(ctx, in, info, ffmpeg.Jail{}); err != nil {
						return err
					}
				}
				return ffmpeg.Run(ctx, ffmpeg.LadderArgs(in, out, info, rungs, c.x), ffmpeg.RunOptions{Duration: info.Length()})
			})
			if err != nil {
				return nil, err
			}
			*c.runs = append(*c.runs, took)
		}
	}
	finish(&r, 0.999)
	r.Notes = fmt.Sprintf("%.0f s %dp H.264 %s + AAC (audio copied: %t), ladder %s", info.Length(), min(info.Width, info.Height), rate, fast.Audio, rungNamesOf(rungs))
	return []bench.Result{r}, nil
}

func rungNamesOf(rungs []ffmpeg.Rung) string {
	names := make([]string, len(rungs))
	for i, r := range rungs {
		names[i] = r.Name
	}
	return strings.Join(names, "/")
}
