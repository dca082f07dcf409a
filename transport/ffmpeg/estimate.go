package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// The fast path copies the source's video only while the copy costs at
// most overspend times the bits the top rung's quality target spends on
// the same pictures: a screen recording uploaded at 1.4 Mbit/s whose
// 1080p rung at CRF 23 needs 160 kbit/s is encoded, not stored and served
// at nine times the bytes for as long as it is kept. Under that, the copy
// stays: its pictures are the upload's own, and it saves the top rung's
// encode.
//
// EstimateKbps measures the target on samples of the source, each one
// segment long (the ladder's GOP: every segment starts with a keyframe,
// whose cost a shorter sample would overweigh): one for each
// estimateEvery seconds of source, at least one, at most
// maxEstimateSamples, spread evenly. A 4 s sample at 1080p costs 2.5 to 6
// CPU seconds and holds the ladder back by about 2.5 s on 2 cores, so a
// video of up to two minutes gets one. A source shorter than minEstimated
// is not sampled: its copy holds few bytes, and a sample would cost a
// large share of the encode it decides on. A wrong estimate costs little:
// too low, the rung is encoded to the quality target every other upload
// gets; too high, the copy is kept, as before there was an estimate.
const (
	overspend          = 1.5
	minEstimated       = 16  // seconds: no sample of a shorter source
	estimateEvery      = 120 // seconds of source per sample
	maxEstimateSamples = 3
)

// sample is a stretch of the source, in seconds.
type sample struct{ at, length float64 }

// estimateSamples are the stretches EstimateKbps encodes of a source of
// length seconds: none under minEstimated.
func estimateSamples(length float64) []sample {
	if length < minEstimated {
		return nil
	}
	n := min(max(int(length/estimateEvery), 1), maxEstimateSamples)
	out := make([]sample, 0, n)
	for i := range n {
		mid := (float64(i) + 0.5) * length / float64(n)
		at := math.Max(0, math.Min(mid-segmentSeconds/2.0, length-segmentSeconds))
		out = append(out, sample{at: at, length: segmentSeconds})
	}
	return out
}

// estimateArgs are the arguments of EstimateKbps's ffmpeg: every sample
// an input of its own (seeked to its start, so only the GOPs it needs are
// decoded), the samples joined and encoded as LadderArgs encodes rung top
// (the same encoder, rate settings and keyframes), raw H.264 on stdout.
func estimateArgs(in Input, info Info, top Rung, samples []sample) []string {
	args := []string{"-v", "error", "-nostdin"}
	var pads strings.Builder
	for k, s := range samples {
		args = append(args, "-ss", seconds(s.at), "-t", seconds(s.length))
		args = append(args, in.capped(info.MaxPixels)...)
		pads.WriteString("[" + videoMapOf(k, info) + "]")
	}
	graph := fmt.Sprintf("%sconcat=n=%d:v=1:a=0,%s[v]", pads.String(), len(samples), scaleFilter(top.Width, top.Height))
	args = append(args, "-filter_complex", graph, "-map", "[v]")
	args = append(args, x264()...)
	args = append(args, rateArgs(0, top)...)
	return append(args, "-force_key_frames", Extras{}.keyFrames(), "-sc_threshold", "0", "-f", "h264", "pipe:1")
}

// EstimateKbps is the average bitrate (kbit/s) the ladder's encoder spends
// on rung top for the source of info: samples of it encoded as the
// ladder would, their bytes counted, nothing written. ok is false when
// the source is too short to be sampled or top has no quality target
// (a fixed bitrate spends what it is told).
func EstimateKbps(ctx context.Context, in Input, info Info, top Rung, j Jail) (kbps float64, ok bool, err error) {
	samples := estimateSamples(info.Length())
	if len(samples) == 0 || top.CRF <= 0 {
		return 0, false, nil
	}
	var n int64
	_, err = runTool(ctx, j, "ffmpeg", estimateArgs(in, info, top, samples), func(r io.Reader) error {
		var err error
		n, err = io.Copy(io.Discard, r)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("estimate the top rung's bitrate: %w", err)
	}
	if n == 0 {
		return 0, false, errors.New("estimate the top rung's bitrate: no frame encoded")
	}
	var secs float64
	for _, s := range samples {
		secs += s.length
	}
	return float64(n) * 8 / 1000 / secs, true, nil
}
