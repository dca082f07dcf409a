package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kino-video/kino/transport/ffmpeg"
)

// Extra are the measures run only when named (--only): the optional
// outputs (storyboard, download), the fast path (the top rung copied, not
// encoded), the ladder's bytes against quality (quality.go) and the time
// to playable. kino bench passes them as
// Options.More.
var Extra = map[string]Measure{"outputs": benchOutputs, "fastpath": benchFastPath, QualityMeasure: benchQuality}

// benchClip writes a testsrc2 clip with a 48 kHz tone, H.264 + AAC made
// with the x264 options given, and probes it.
func benchClip(ctx context.Context, dir, name string, o Options, x264 ...string) (ffmpeg.Input, ffmpeg.Info, error) {
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

// cost is what a step took: wall-clock seconds, and CPU seconds (user +
// system) of the processes it ran. On a shared machine the CPU time is
// the steadier figure: the wall clock counts the neighbours' load too.
type cost struct{ wall, cpu float64 }

func (c cost) plus(d cost) cost { return cost{c.wall + d.wall, c.cpu + d.cpu} }

// ffmpegCost runs ffmpeg with args (kino's own, as ffmpeg.Run would run
// them, without the jail) and returns what it cost.
func ffmpegCost(ctx context.Context, args []string) (cost, error) {
	cmd := exec.CommandContext(ctx, "ffmpeg", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t0 := time.Now()
	err := cmd.Run()
	c := cost{wall: time.Since(t0).Seconds()}
	if cmd.ProcessState != nil {
		c.cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	if err != nil {
		return c, fmt.Errorf("ffmpeg: %v: %s", err, stderr.String())
	}
	return c, nil
}

// scratch makes a fresh directory under dir and returns it with its
// removal.
func scratch(dir string) (string, func(), error) {
	out, err := os.MkdirTemp(dir, "run-")
	return out, func() { os.RemoveAll(out) }, err
}

// benchOutputs measures the ladder alone, the storyboard's own pass (its
// tiles, then their layout in Go), and the download remux after the
// ladder, on a clip the fast path does not take (as most uploads): the
// cost of the storyboard and the download as a ratio of the ladder's, in
// CPU seconds (wall clock in the notes). The runs interleave, so every ratio's halves see the same load.
func benchOutputs(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
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
	ladder := func(out string, x ffmpeg.Extras) (cost, error) {
		return ffmpegCost(ctx, ffmpeg.LadderArgs(in, filepath.Join(out, "hls"), info, rungs, x))
	}
	clip := fmt.Sprintf("%.0f s %dp, ladder %s, storyboard %d tiles", info.Length(), min(info.Width, info.Height), rungNamesOf(rungs), sb.Count)
	// The storyboard's own pass (kino makes its tiles in the stills' pass,
	// and in this one when that pass fails; a branch of the ladder's pass
	// froze ffmpeg's progress).
	second := Result{Measure: "ladder + storyboard (own pass) + download, vs the ladder (CPU s)", Unit: "s", Goal: "<= 1.10"}
	var wallBase, wallSecond, cpuPass, cpuDL []float64
	for i := 0; i < o.Runs; i++ {
		say("outputs: run %d of %d", i+1, o.Runs)
		out, done, err := scratch(dir)
		if err != nil {
			return nil, err
		}
		base, err := ladder(out, ffmpeg.Extras{})
		var dl, pass cost
		if err == nil {
			dl, err = ffmpegCost(ctx, ffmpeg.DownloadArgs(filepath.Join(out, "hls"), dlRung, info.HasAudio, filepath.Join(out, "download.mp4")))
		}
		if err == nil {
			pass, err = ffmpegCost(ctx, ffmpeg.StoryboardArgs(in, out, info, sb))
			if err == nil {
				// The layout in Go, one goroutine: its wall clock counts as CPU too.
				t0 := time.Now()
				err = sb.Assemble(out, filepath.Join(out, "storyboard.jpg"))
				layout := time.Since(t0).Seconds()
				pass = pass.plus(cost{layout, layout})
			}
		}
		done()
		if err != nil {
			return nil, err
		}
		second.BaseRuns = append(second.BaseRuns, base.cpu)
		second.KinoRuns = append(second.KinoRuns, base.plus(pass).plus(dl).cpu)
		wallBase, wallSecond = append(wallBase, base.wall), append(wallSecond, base.plus(pass).plus(dl).wall)
		cpuPass, cpuDL = append(cpuPass, pass.cpu), append(cpuDL, dl.cpu)
	}
	second.finishLower(1.10)
	second.Notes = fmt.Sprintf("%s; the storyboard pass alone %.2f CPU s (tiles; laid out in Go), the download remux %.2f s; wall clock %.1f s vs %.1f s (run after the ladder)",
		clip, median(cpuPass), median(cpuDL), median(wallSecond), median(wallBase))
	return []Result{second}, nil
}

// benchFastPath measures the ladder of an H.264/AAC source the fast path
// takes (the top rung's size, within its cap) with its top rung copied,
// its keyframes checked first, against the same ladder fully encoded, in
// CPU seconds (wall clock in the notes), runs interleaved.
func benchFastPath(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
	dir, err := os.MkdirTemp("", "kino-bench-fastpath-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	say("fastpath: generating the clip")
	rate := "4000k"
	if o.Quick {
		rate = "250k"
	}
	in, info, err := benchClip(ctx, dir, "source.mp4", o, "-preset", "veryfast", "-g", "50",
		"-b:v", rate, "-maxrate", rate, "-bufsize", rate)
	if err != nil {
		return nil, err
	}
	rungs := ffmpeg.Ladder(info)
	r := Result{Measure: "ladder with the top rung copied (fast path), vs fully encoded (CPU s)", Unit: "s", Goal: "< 1 (lower is faster)"}
	var wallFast, wallFull, decided []float64
	var fast ffmpeg.FastPath
	for i := 0; i < o.Runs; i++ {
		say("fastpath: run %d of %d", i+1, o.Runs)
		out, done, err := scratch(dir)
		if err != nil {
			return nil, err
		}
		// The decision as the transcoder makes it before it copies: the
		// keyframe check and the estimate of the encoded top rung.
		t0, cpu0 := time.Now(), childCPUOr(0)
		fast, err = ffmpeg.DecideFastPath(ctx, in, info, rungs[0], ffmpeg.Jail{})
		wall := time.Since(t0).Seconds()
		decision := childCPUOr(cpu0+wall) - cpu0
		if err == nil && !fast.Video {
			err = fmt.Errorf("the fast path does not take the clip: %s", fast.Why)
		}
		if err != nil {
			done()
			return nil, err
		}
		var fastCost, fullCost cost
		fastCost, err = ffmpegCost(ctx, ffmpeg.LadderArgs(in, filepath.Join(out, "fast"), info, fast.Rungs(rungs), ffmpeg.Extras{Fast: fast}))
		if err == nil {
			fullCost, err = ffmpegCost(ctx, ffmpeg.LadderArgs(in, filepath.Join(out, "full"), info, rungs, ffmpeg.Extras{}))
		}
		done()
		if err != nil {
			return nil, err
		}
		r.KinoRuns, r.BaseRuns = append(r.KinoRuns, fastCost.cpu+decision), append(r.BaseRuns, fullCost.cpu)
		wallFast, wallFull, decided = append(wallFast, fastCost.wall+wall), append(wallFull, fullCost.wall), append(decided, decision)
	}
	r.finishLower(0.999)
	r.Notes = fmt.Sprintf("%.0f s %dp H.264 %s + AAC (audio copied: %t), ladder %s (on the fast path the encoded rungs capped in proportion to the copy, as kino does); the decision (keyframe check, estimate of the encoded top rung: %.0f kbit/s against the copy's %.0f) %.2f CPU s; wall clock %.1f s vs %.1f s",
		info.Length(), min(info.Width, info.Height), rate, fast.Audio, rungNamesOf(rungs), fast.EncodedKbps, fast.Kbps, median(decided), median(wallFast), median(wallFull))
	return []Result{r}, nil
}

// childCPUOr is childrenCPU, or fallback where it cannot be read.
func childCPUOr(fallback float64) float64 {
	if s, ok := childrenCPU(); ok {
		return s
	}
	return fallback
}

func rungNamesOf(rungs []ffmpeg.Rung) string {
	names := make([]string, len(rungs))
	for i, r := range rungs {
		names[i] = r.Name
	}
	return strings.Join(names, "/")
}
