package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/media"
)

// The quality measure encodes a corpus of generated clips three ways and
// compares, rung by rung, the bytes a viewer fetches with the quality they
// get (SSIM and PSNR against the upload scaled to the rung):
//
//	fixed     the fixed-bitrate ladder kino wrote before: each rung at its
//	          bitrate (-b:v), -maxrate 1.07× and -bufsize 1.5× of it
//	kino      kino's ladder as it is (ffmpeg.Ladder and LadderArgs)
//	peertube  PeerTube's default VOD profile, one process per rung
//
// The corpus is synthetic (ffmpeg's lavfi sources), chosen to span what
// people upload from the easiest picture to the hardest; it is not real
// footage, and its numbers say how the ladders behave at the two ends, not
// what a given library of real videos saves.

// QualityMeasure is kino bench's --only name of the quality measure, run
// only when named.
const QualityMeasure = "quality"

// qualityClip is one clip of the corpus: a lavfi source at 1080p30. The
// sources that draw from a random seed are given one, so every run of the
// bench encodes the same pictures; gradients' colors too, which ffmpeg 5.1
// draws from the clock whatever the seed.
type qualityClip struct {
	Name, About, Source string
}

var qualityCorpus = []qualityClip{
	{"screen", "a nearly static screen (testsrc: a counter, a moving bar)", "testsrc=size=%s:rate=30"},
	{"soft", "soft footage: a 480x270 testsrc2 scaled up (bicubic)", "testsrc2=size=480x270:rate=30,scale=%s:flags=bicubic"},
	{"gradients", "slow, smooth motion (moving gradients)", "gradients=size=%s:rate=30:speed=0.02:n=4:seed=1:c0=0x1f4e79:c1=0xd9822b:c2=0x3c8d2f:c3=0xa83279"},
	{"sierpinski", "moderate motion with fine detail (a panning fractal)", "sierpinski=size=%s:rate=30:seed=1"},
	{"motion", "high motion (testsrc2)", "testsrc2=size=%s:rate=30"},
	{"mandelbrot", "high detail (a zooming mandelbrot)", "mandelbrot=size=%s:rate=30"},
}

// Ladders the quality measure compares, in the order of the report.
const (
	ladderFixed    = "fixed"
	ladderKino     = "kino"
	ladderPeerTube = "peertube"
)

var qualityLadders = []string{ladderFixed, ladderKino, ladderPeerTube}

// QualityRung is what one ladder made of one rung of one clip.
type QualityRung struct {
	Clip   string  `json:"clip"`
	Ladder string  `json:"ladder"`
	Rung   string  `json:"rung"`
	Bytes  int64   `json:"bytes"`
	Kbps   float64 `json:"kbps"` // Bytes over the clip's length
	SSIM   float64 `json:"ssim"`
	PSNR   float64 `json:"psnr"`
}

// qualityClipResult is one clip's rungs and the CPU seconds each ladder
// took (one process for fixed and kino; PeerTube's per-rung processes
// summed), a median over the runs.
type qualityClipResult struct {
	Clip    qualityClip
	Seconds float64
	Rungs   []QualityRung
	CPU     map[string]float64
	CPURuns map[string][]float64 // each run's, in order
}

// benchQuality encodes the corpus with the three ladders (kino's and the
// fixed one o.Runs times, for the CPU seconds, PeerTube's once: x264
// writes the same bytes every run, which is checked) and measures every rung once; it writes quality.md (the table)
// and quality.svg (bytes against SSIM, a panel per clip) under
// o.ReportDir.
func benchQuality(ctx context.Context, o Options, say func(string, ...any)) ([]Result, error) {
	if !slices.Contains(o.Only, QualityMeasure) {
		return nil, nil // a quarter of an hour: only when named
	}
	dir, err := os.MkdirTemp("", "kino-bench-quality-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	size, secs, corpus := "1920x1080", 10, qualityCorpus
	if o.Quick {
		size, secs, corpus = "320x180", 1, []qualityClip{qualityCorpus[0], qualityCorpus[4]}
	}
	var clips []qualityClipResult
	for _, c := range corpus {
		say("quality: %s: generating %d s at %s", c.Name, secs, size)
		src := filepath.Join(dir, c.Name+".mp4")
		if err := generateClip(ctx, src, fmt.Sprintf(c.Source, size), secs); err != nil {
			return nil, err
		}
		res, err := encodeClip(ctx, o, dir, c, src, say)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		clips = append(clips, res)
		if err := os.Remove(src); err != nil {
			return nil, err
		}
	}
	results := qualityResults(clips)
	if o.ReportDir != "" {
		if err := writeQualityReport(o.ReportDir, clips, results); err != nil {
			return nil, err
		}
		say("quality: the table and the plot are in %s", o.ReportDir)
	}
	return results, nil
}

// generateClip writes the upload of a clip: H.264 at a high quality (CRF
// 16, as a camera or a screen recorder would hand it over), no audio.
func generateClip(ctx context.Context, out, source string, secs int) error {
	args := []string{"-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", source, "-t", strconv.Itoa(secs),
		"-c:v", "libx264", "-preset", "veryfast", "-crf", "16", "-pix_fmt", "yuv420p", out}
	if b, err := exec.CommandContext(ctx, "ffmpeg", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("generate %s: %v: %s", filepath.Base(out), err, b)
	}
	return nil
}

// encodeClip encodes one clip with every ladder o.Runs times and measures
// the rungs of the last run.
func encodeClip(ctx context.Context, o Options, dir string, c qualityClip, src string, say func(string, ...any)) (qualityClipResult, error) {
	res := qualityClipResult{Clip: c, CPU: map[string]float64{}, CPURuns: map[string][]float64{}}
	in, err := ffmpeg.OpenInput(src, "")
	if err != nil {
		return res, err
	}
	info, err := ffmpeg.Probe(ctx, in, ffmpeg.ProbeOptions{Bounds: ffmpeg.DefaultBounds()})
	if err != nil {
		return res, err
	}
	res.Seconds = info.Length()
	rungs := ffmpeg.Ladder(info)
	cpu := map[string][]float64{}
	sizes := map[string][]int64{}
	out := map[string]string{}
	for run := range o.Runs {
		for _, l := range qualityLadders {
			if run > 0 && l == ladderPeerTube {
				continue // its bytes are the same every run, and its CPU time is not a goal: once is enough
			}
			say("quality: %s: %s ladder, run %d of %d", c.Name, l, run+1, o.Runs)
			d := filepath.Join(dir, c.Name+"-"+l)
			if err := os.RemoveAll(d); err != nil {
				return res, err
			}
			if err := os.Mkdir(d, 0o755); err != nil {
				return res, err
			}
			spent, err := encodeLadder(ctx, l, in, src, d, info, rungs)
			if err != nil {
				return res, fmt.Errorf("%s ladder: %w", l, err)
			}
			cpu[l] = append(cpu[l], spent)
			total, err := media.Size(d)
			if err != nil {
				return res, err
			}
			if len(sizes[l]) > 0 && sizes[l][0] != total {
				say("quality: %s: the %s ladder wrote %d bytes, %d in the first run", c.Name, l, total, sizes[l][0])
			}
			sizes[l] = append(sizes[l], total)
			out[l] = d
		}
	}
	for _, l := range qualityLadders {
		res.CPU[l], res.CPURuns[l] = median(cpu[l]), cpu[l]
		say("quality: %s: %s ladder: SSIM and PSNR of %d rungs", c.Name, l, len(rungs))
		qs, err := measureLadder(ctx, l, out[l], rungs, src, res.Seconds)
		if err != nil {
			return res, fmt.Errorf("%s: %w", l, err)
		}
		for i := range qs {
			qs[i].Clip = c.Name
		}
		res.Rungs = append(res.Rungs, qs...)
		if err := os.RemoveAll(out[l]); err != nil {
			return res, err
		}
	}
	return res, nil
}

// encodeLadder encodes src into d with ladder l and returns its CPU
// seconds.
func encodeLadder(ctx context.Context, l string, in ffmpeg.Input, src, d string, info ffmpeg.Info, rungs []ffmpeg.Rung) (float64, error) {
	switch l {
	case ladderKino:
		c, err := ffmpegCost(ctx, ffmpeg.LadderArgs(in, d, info, rungs, ffmpeg.Extras{}))
		return c.cpu, err
	case ladderFixed:
		c, err := ffmpegCost(ctx, ffmpeg.LadderArgs(in, d, info, FixedLadder(rungs), ffmpeg.Extras{}))
		return c.cpu, err
	}
	bitrate, err := formatBitrate(ctx, src)
	if err != nil {
		return 0, err
	}
	var spent float64
	for _, r := range rungs {
		c, err := ffmpegCost(ctx, PeerTubeArgs(src, d, info, r, bitrate))
		if err != nil {
			return 0, err
		}
		spent += c.cpu
	}
	return spent, nil
}

// FixedLadder is rungs as kino's fixed-bitrate ladder encoded them: each
// at its cap on average (-b:v), -maxrate 1.07× and -bufsize 1.5× of it,
// with the preset's reference frames.
func FixedLadder(rungs []ffmpeg.Rung) []ffmpeg.Rung {
	out := make([]ffmpeg.Rung, len(rungs))
	for i, r := range rungs {
		kbps := r.MaxRate
		r.CRF, r.Bitrate, r.MaxRate, r.BufSize, r.Refs = 0, kbps, (kbps*107+50)/100, (kbps*3+1)/2, 0
		out[i] = r
	}
	return out
}

// peerTubeBPP are PeerTube's average bits per pixel per frame by
// resolution (packages/core-utils/src/videos/bitrate.ts,
// averageBitPerPixel; its minimum is 0.02 everywhere).
var peerTubeBPP = []struct {
	res int
	bpp float64
}{{2160, 0.08}, {1440, 0.09}, {1080, 0.10}, {720, 0.11}, {480, 0.12}, {360, 0.15}, {240, 0.17}, {144, 0.19}}

// PeerTubeBitrate is the target bit rate (bits/s) PeerTube's default VOD
// profile gives a rung of short side res (getTargetBitrate): the average
// bits per pixel of the largest standard resolution not above res, times
// res × res × aspect × fps, capped at the input's bit rate + 30 %, at least
// 0.02 bits per pixel.
func PeerTubeBitrate(res int, aspect, fps float64, input int64) int64 {
	ratio := math.Round(aspect*10000) / 10000
	if ratio < 1 {
		ratio = 1 / ratio
	}
	pixels := float64(res) * float64(res) * ratio * fps
	bpp := 0.0
	for _, s := range peerTubeBPP {
		if s.res <= res {
			bpp = s.bpp
			break
		}
	}
	target := int64(math.Floor(pixels * bpp))
	if input > 0 {
		target = min(target, input+input*3/10)
	}
	return max(target, int64(math.Floor(pixels*0.02)))
}

// PeerTubeArgs is the ffmpeg command PeerTube's default VOD profile runs
// for one HLS rung of src (packages/ffmpeg: presets.ts, encoder-options.ts,
// ffmpeg-default-transcoding-profile.ts, ffmpeg-vod.ts), without audio:
// libx264 veryfast with x264's default CRF 23 under -maxrate T and -bufsize
// 2T, 16 B-frames (b_strategy 1), a keyframe every 2 s, one thread, fMP4
// HLS in a single file. PeerTube transcodes HLS from its own 1080p web
// video; here the profile is applied to the upload directly.
func PeerTubeArgs(src, d string, info ffmpeg.Info, r ffmpeg.Rung, inputBitrate int64) []string {
	fps := math.Round(info.FrameRate)
	short := min(r.Width, r.Height)
	t := PeerTubeBitrate(short, float64(info.Width)/float64(info.Height), fps, inputBitrate)
	scale := fmt.Sprintf("scale=w=-2:h=%d", short)
	if info.Width < info.Height {
		scale = fmt.Sprintf("scale=w=%d:h=-2", short)
	}
	return []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", src, "-an",
		"-threads", "1", "-max_muxing_queue_size", "1024", "-map_metadata", "-1", "-pix_fmt", "yuv420p",
		"-c:v", "libx264", "-vf", scale, "-preset", "veryfast",
		"-maxrate:v", strconv.FormatInt(t, 10), "-bufsize:v", strconv.FormatInt(2*t, 10),
		"-b_strategy", "1", "-bf", "16", "-r", strconv.FormatFloat(fps, 'f', -1, 64), "-g:v", strconv.FormatFloat(2*fps, 'f', -1, 64),
		"-hls_time", "4", "-hls_list_size", "0", "-hls_playlist_type", "vod",
		"-hls_segment_type", "fmp4", "-hls_flags", "single_file",
		"-hls_segment_filename", filepath.Join(d, r.Name+".mp4"), "-f", "hls", filepath.Join(d, r.Name+".m3u8")}
}

// formatBitrate is the container's bit rate ffprobe reports, as PeerTube
// reads it.
func formatBitrate(ctx context.Context, src string) (int64, error) {
	b, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "format=bit_rate", "-of", "csv=p=0", src).Output()
	if err != nil {
		return 0, fmt.Errorf("ffprobe %s: %v", src, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// rungFiles are the files holding rung r of ladder l in d (its segments,
// and fMP4's initialization segment, fetched once), and the playlist to
// decode it from.
func rungFiles(l, d string, r ffmpeg.Rung) (files []string, playlist string, err error) {
	if l == ladderPeerTube {
		return []string{filepath.Join(d, r.Name+".mp4")}, filepath.Join(d, r.Name+".m3u8"), nil
	}
	files, err = filepath.Glob(filepath.Join(d, r.Name, "seg_*"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no segments of %s", r.Name)
	}
	inits, _ := filepath.Glob(filepath.Join(d, r.Name, "init*.mp4")) // fMP4's initialization segment
	files = append(files, inits...)
	return files, filepath.Join(d, r.Name, "index.m3u8"), err
}

var (
	ssimAll = regexp.MustCompile(`\[Parsed_ssim_([0-9]+) @ [^]]*\] SSIM .*All:([0-9.]+)`)
	psnrAvg = regexp.MustCompile(`\[Parsed_psnr_([0-9]+) @ [^]]*\] PSNR .*average:([0-9.]+|inf)`)
)

// measureLadder measures the rungs of ladder l in d: their bytes, and
// their SSIM and PSNR against the upload scaled to each rung's size
// (bicubic), frames matched by time from each one's start. One ffmpeg
// decodes the upload once for every rung; its filters log their scores in
// the order of the graph, which is the order of rungs.
func measureLadder(ctx context.Context, l, d string, rungs []ffmpeg.Rung, src string, secs float64) ([]QualityRung, error) {
	qs := make([]QualityRung, len(rungs))
	args := []string{"-nostdin", "-hide_banner", "-nostats", "-i", src}
	graph := []string{fmt.Sprintf("[0:v]setpts=PTS-STARTPTS,split=%d", 2*len(rungs)) + labels("s", 2*len(rungs))}
	for k, r := range rungs {
		qs[k] = QualityRung{Ladder: l, Rung: r.Name}
		files, playlist, err := rungFiles(l, d, r)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				return nil, err
			}
			qs[k].Bytes += fi.Size()
		}
		qs[k].Kbps = float64(qs[k].Bytes) * 8 / 1000 / secs
		args = append(args, "-i", playlist)
		graph = append(graph,
			fmt.Sprintf("[%d:v]setpts=PTS-STARTPTS,split[d%d][e%d]", k+1, k, k),
			fmt.Sprintf("[s%d][d%d]scale2ref=flags=bicubic[r%d][f%d];[f%d][r%d]ssim[ssim%d]", 2*k, k, k, k, k, k, k),
			fmt.Sprintf("[s%d][e%d]scale2ref=flags=bicubic[q%d][g%d];[g%d][q%d]psnr[psnr%d]", 2*k+1, k, k, k, k, k, k))
	}
	args = append(args, "-filter_complex", strings.Join(graph, ";"))
	for k := range rungs {
		args = append(args, "-map", fmt.Sprintf("[ssim%d]", k), "-f", "null", "-", "-map", fmt.Sprintf("[psnr%d]", k), "-f", "null", "-")
	}
	b, err := exec.CommandContext(ctx, "ffmpeg", args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ssim: %v: %s", err, tail(b))
	}
	ssim, psnr := scores(ssimAll, b), scores(psnrAvg, b)
	if len(ssim) != len(rungs) || len(psnr) != len(rungs) {
		return nil, fmt.Errorf("ssim: %d SSIM and %d PSNR scores for %d rungs in: %s", len(ssim), len(psnr), len(rungs), tail(b))
	}
	for k := range qs {
		qs[k].SSIM, qs[k].PSNR = ssim[k], psnr[k]
	}
	return qs, nil
}

// labels are n filtergraph labels [<p>0]...[<p>n-1].
func labels(p string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[%s%d]", p, i)
	}
	return b.String()
}

// scores are the values re finds in ffmpeg's log, in the order of the
// filters' indexes in the graph ("inf", identical pictures, as 100).
func scores(re *regexp.Regexp, log []byte) []float64 {
	type score struct {
		index int
		value float64
	}
	var all []score
	for _, m := range re.FindAllSubmatch(log, -1) {
		i, _ := strconv.Atoi(string(m[1]))
		v, err := strconv.ParseFloat(string(m[2]), 64)
		if err != nil {
			v = 100
		}
		all = append(all, score{i, v})
	}
	slices.SortFunc(all, func(a, b score) int { return a.index - b.index })
	out := make([]float64, len(all))
	for i, s := range all {
		out[i] = s.value
	}
	return out
}

func tail(b []byte) string {
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}

// rungOf is the measured rung of clip results rs: ladder l, rung name.
func rungOf(rs []QualityRung, l, name string) QualityRung {
	for _, r := range rs {
		if r.Ladder == l && r.Rung == name {
			return r
		}
	}
	return QualityRung{}
}

// clipBytes are the bytes of every rung of ladder l.
func clipBytes(c qualityClipResult, l string) int64 {
	var n int64
	for _, r := range c.Rungs {
		if r.Ladder == l {
			n += r.Bytes
		}
	}
	return n
}

// qualityResults are the goals: kino's ladder against the fixed one and
// against PeerTube's, over the corpus.
func qualityResults(clips []qualityClipResult) []Result {
	var vsFixed, vsPeerTube []float64
	worstBytes, worstSSIM, worstPT := 0.0, math.Inf(1), math.Inf(1)
	var worstClip, worstRung, worstPTRung string
	below, rungs := 0, 0
	var cpuKino, cpuFixed, cpuPT float64
	for _, c := range clips {
		ratio := float64(clipBytes(c, ladderKino)) / float64(clipBytes(c, ladderFixed))
		vsFixed = append(vsFixed, ratio)
		if ratio > worstBytes {
			worstBytes, worstClip = ratio, c.Clip.Name
		}
		vsPeerTube = append(vsPeerTube, float64(clipBytes(c, ladderKino))/float64(clipBytes(c, ladderPeerTube)))
		for _, r := range c.Rungs {
			if r.Ladder != ladderKino {
				continue
			}
			rungs++
			if d := r.SSIM - rungOf(c.Rungs, ladderFixed, r.Rung).SSIM; d < worstSSIM {
				worstSSIM, worstRung = d, c.Clip.Name+" "+r.Rung
			}
			if d := r.SSIM - rungOf(c.Rungs, ladderPeerTube, r.Rung).SSIM; d < 0 {
				below++
				if d < worstPT {
					worstPT, worstPTRung = d, c.Clip.Name+" "+r.Rung
				}
			}
		}
		cpuKino, cpuFixed, cpuPT = cpuKino+c.CPU[ladderKino], cpuFixed+c.CPU[ladderFixed], cpuPT+c.CPU[ladderPeerTube]
	}
	n := len(clips)
	bytes := Result{Measure: fmt.Sprintf("quality: bytes, kino's ladder / the fixed ladder (median of %d clips)", n),
		Kino: median(vsFixed), Baseline: 1, Ratio: median(vsFixed), Goal: "<= 0.70", KinoRuns: vsFixed}
	bytes.Met = bytes.Ratio <= 0.70
	bytes.Notes = "per clip " + ratios(clips, vsFixed)
	worst := Result{Measure: "quality: bytes, kino's ladder / the fixed ladder (worst clip)", Kino: worstBytes, Baseline: 1,
		Ratio: worstBytes, Goal: "<= 1.05", Met: worstBytes <= 1.05, Notes: worstClip}
	ssim := Result{Measure: "quality: SSIM, kino's ladder - the fixed ladder (worst rung)", Kino: worstSSIM, Ratio: worstSSIM,
		Goal: ">= -0.005", Met: worstSSIM >= -0.005, Notes: fmt.Sprintf("%s, %+.4f", worstRung, worstSSIM)}
	pt := Result{Measure: fmt.Sprintf("quality: bytes, kino's ladder / PeerTube's (median of %d clips)", n),
		Kino: median(vsPeerTube), Baseline: 1, Ratio: median(vsPeerTube), Goal: "<= 0.90 at SSIM >= PeerTube's", KinoRuns: vsPeerTube}
	pt.Met = pt.Ratio <= 0.90 && below == 0
	pt.Notes = fmt.Sprintf("per clip %s; rungs below PeerTube's SSIM: %d of %d", ratios(clips, vsPeerTube), below, rungs)
	if below > 0 {
		pt.Notes += fmt.Sprintf(" (worst %s, %.4f)", worstPTRung, worstPT)
	}
	cpu := Result{Measure: "quality: encode CPU s, kino's ladder / the fixed ladder (corpus)", Unit: "s", Kino: cpuKino, Baseline: cpuFixed,
		Goal: "<= 1.10", KinoRuns: runTotals(clips, ladderKino), BaseRuns: runTotals(clips, ladderFixed)}
	var each []string
	for i := range min(len(cpu.KinoRuns), len(cpu.BaseRuns)) {
		each = append(each, fmt.Sprintf("%.2f", cpu.KinoRuns[i]/cpu.BaseRuns[i]))
	}
	cpu.Notes = fmt.Sprintf("the sums of each clip's median; each run's ratio %s; PeerTube's, one process per rung: %.1f s",
		strings.Join(each, ", "), cpuPT)
	if cpuFixed > 0 {
		cpu.Ratio = cpuKino / cpuFixed
	}
	cpu.Met = cpu.Ratio > 0 && cpu.Ratio <= 1.10
	return []Result{bytes, worst, ssim, pt, cpu}
}

// runTotals are ladder l's CPU seconds over the corpus, run by run.
func runTotals(clips []qualityClipResult, l string) []float64 {
	var out []float64
	for _, c := range clips {
		for i, v := range c.CPURuns[l] {
			if i == len(out) {
				out = append(out, 0)
			}
			out[i] += v
		}
	}
	return out
}

func ratios(clips []qualityClipResult, rs []float64) string {
	parts := make([]string, len(clips))
	for i, c := range clips {
		parts[i] = fmt.Sprintf("%s %.2f", c.Clip.Name, rs[i])
	}
	return strings.Join(parts, ", ")
}

// writeQualityReport writes quality.md (the corpus, the goals, a row per
// clip, ladder and rung), quality.json (the rows) and quality.svg (the
// plot) under dir.
func writeQualityReport(dir string, clips []qualityClipResult, results []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	md.WriteString("# Quality bench\n\nA synthetic corpus (ffmpeg's lavfi sources at 1080p30), not real footage:\n\n")
	for _, c := range clips {
		fmt.Fprintf(&md, "- %s: %s, %.0f s\n", c.Clip.Name, c.Clip.About, c.Seconds)
	}
	md.WriteString("\n")
	if err := Table(&md, results); err != nil {
		return err
	}
	md.WriteString("\n| clip | rung | ladder | kbit/s | bytes | SSIM | PSNR dB | CPU s (ladder) |\n|---|---|---|---|---|---|---|---|\n")
	var rows []QualityRung
	for _, c := range clips {
		rows = append(rows, c.Rungs...)
		for _, name := range clipRungs(c) {
			for _, l := range qualityLadders {
				r := rungOf(c.Rungs, l, name)
				fmt.Fprintf(&md, "| %s | %s | %s | %.0f | %d | %.5f | %.2f | %.1f |\n", c.Clip.Name, name, l, r.Kbps, r.Bytes, r.SSIM, r.PSNR, c.CPU[l])
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "quality.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "quality.json"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "quality.svg"), qualityPlot(clips), 0o644)
}

// clipRungs are the rungs of a clip, highest first.
func clipRungs(c qualityClipResult) []string {
	var out []string
	for _, r := range c.Rungs {
		if r.Ladder == ladderKino {
			out = append(out, r.Rung)
		}
	}
	return out
}
