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
// EstimateRate encodes samples of the source as the rung would be, each
// one segment long (the ladder's GOP: every segment starts with a
// keyframe, whose cost a shorter sample would overweigh) and starting on
// a whole second, and compares their bytes with the source's own bytes in
// the same seconds (the packet scan's, Source.seconds; DecideFastPath
// counts what the copy keeps of them, its filler data dropped): the same
// pictures on both sides, so a sample that happens to fall on the file's
// easiest or hardest stretch does not skew the comparison much as long as
// the source spends its bits as an encoder would (with a quality target). A
// source at a constant bitrate spends as much on its easy stretches as on
// its hard ones, and is judged by the stretches sampled.
//
// A source gets one sample per two minutes begun, at most
// maxEstimateSamples, spread evenly, and no more than fit in the pixels of
// that many 1080p samples (a 4 s 1080p sample costs 2.5 to 6 CPU seconds
// and holds the ladder back by 1.5 to 2.5 s on 2 cores; a 2160p one took
// 9.7 CPU s and 5.3 s). Short sources are sampled too, from
// minEstimated (two segments) up, though under 16 s the sample costs a
// third to a half of the top rung's encode: short screen recordings are
// common, and their copy would be kept at up to ten times the bytes for
// as long as the video is. A shorter source is not sampled (the sample
// would be most of the encode it decides on); its copy is at most two
// segments at the top rung's cap.
const (
	overspend          = 1.5
	minEstimated       = 2 * segmentSeconds // seconds: no sample of a shorter source
	estimateEvery      = 120                // seconds of source per sample, or fewer
	maxEstimateSamples = 3
	samplePixels       = maxEstimateSamples * 1920 * 1080 // the pixels of all samples' pictures, at most
)

// sample is a stretch of the source, in whole seconds from its start.
type sample struct{ at, length int }

// estimateSamples are the stretches EstimateRate encodes of a source of
// length seconds and w×h pixels: none under minEstimated.
func estimateSamples(length float64, w, h int) []sample {
	if length < minEstimated {
		return nil
	}
	n := min(int(math.Ceil(length/estimateEvery)), maxEstimateSamples)
	if px := w * h; px > 0 {
		n = min(n, max(samplePixels/px, 1))
	}
	last := int(length) - segmentSeconds // the latest start inside the source
	out := make([]sample, 0, n)
	for i := range n {
		mid := (float64(i) + 0.5) * length / float64(n)
		at := min(max(int(mid)-segmentSeconds/2, 0), last)
		out = append(out, sample{at: at, length: segmentSeconds})
	}
	return out
}

// estimateArgs are the arguments of EstimateRate's ffmpeg: every sample
// an input of its own (seeked to its start, so only the GOPs it needs are
// decoded), the samples joined and encoded as LadderArgs encodes rung top
// (the same encoder, rate settings and keyframes), raw H.264 on stdout.
//
// A sample starts at the very timestamp whose second the scan's bytes
// count from (-seek_timestamp: -ss is a timestamp, not an offset from the
// file's start time, which an edit list or an audio track starting first
// moves seconds away from the video's first frame).
func estimateArgs(in Input, info Info, top Rung, samples []sample) []string {
	args := []string{"-v", "error", "-nostdin"}
	var pads strings.Builder
	origin, exact := info.Source.seconds.start()
	for k, s := range samples {
		if exact {
			args = append(args, "-seek_timestamp", "1", "-ss", fmt.Sprint(origin+int64(s.at)))
		} else {
			args = append(args, "-ss", fmt.Sprint(s.at))
		}
		args = append(args, "-t", fmt.Sprint(s.length))
		args = append(args, in.capped(info.MaxPixels)...)
		pads.WriteString("[" + videoMapOf(k, info) + "]")
	}
	graph := fmt.Sprintf("%sconcat=n=%d:v=1:a=0,%s[v]", pads.String(), len(samples), scaleFilter(top.Width, top.Height))
	args = append(args, "-filter_complex", graph, "-map", "[v]")
	args = append(args, x264()...)
	args = append(args, rateArgs(0, top)...)
	return append(args, "-force_key_frames", Extras{}.keyFrames(), "-sc_threshold", "0", "-f", "h264", "pipe:1")
}

// Estimate is what EstimateRate measured on the samples of a source.
type Estimate struct {
	Seconds float64 // the samples' length
	Encoded int64   // bytes the top rung's encoder spent on them
	// Source is the bytes the source spends on the same seconds (the
	// packet scan's; DecideFastPath counts what the copy keeps of them);
	// 0 when the scan does not say.
	Source int64

	samples []sample
}

// Ratio is how many times the bits encoding the rung would spend the
// source spends on the same pictures: Source/Encoded, or, when the scan
// does not say what the source spends where, its average bitrate kbps
// against the samples'.
func (e Estimate) Ratio(kbps float64) float64 {
	if e.Encoded <= 0 {
		return 0
	}
	if e.Source > 0 {
		return float64(e.Source) / float64(e.Encoded)
	}
	return kbps / (float64(e.Encoded) * 8 / 1000 / e.Seconds)
}

// EstimateRate encodes samples of the source of info as the ladder would
// encode rung top, counting the bytes, writing nothing. ok is false when
// the source is too short to be sampled or top has no quality target (a
// fixed bitrate spends what it is told).
func EstimateRate(ctx context.Context, in Input, info Info, top Rung, j Jail) (e Estimate, ok bool, err error) {
	samples := estimateSamples(info.Length(), top.Width, top.Height)
	if len(samples) == 0 || top.CRF <= 0 {
		return Estimate{}, false, nil
	}
	_, err = runTool(ctx, j, "ffmpeg", estimateArgs(in, info, top, samples), func(r io.Reader) error {
		var err error
		e.Encoded, err = io.Copy(io.Discard, r)
		return err
	})
	if err != nil {
		return Estimate{}, false, fmt.Errorf("estimate the top rung's bitrate: %w", err)
	}
	if e.Encoded == 0 {
		return Estimate{}, false, errors.New("estimate the top rung's bitrate: no frame encoded")
	}
	for _, s := range samples {
		e.Seconds += float64(s.length)
		e.samples = append(e.samples, s)
	}
	for _, s := range samples {
		n, in := info.Source.seconds.bytesIn(s.at, s.length)
		if !in {
			e.Source = 0
			break
		}
		e.Source += n
	}
	return e, true, nil
}
