package ffmpeg

import (
	"fmt"
	"strconv"
)

// Extras are what the ladder's one ffmpeg pass makes besides the plain
// ladder (LadderArgs).
type Extras struct {
	// Storyboard, when Count > 0, adds the sprite sheet as a second output
	// of the pass, written to StoryboardFile: a branch of the filter graph
	// taken from the lowest rung's picture (from the source when no rung
	// is encoded), so it costs a few small scales and one JPEG.
	Storyboard     Storyboard
	StoryboardFile string
	// Fast copies the source's video as the top rung (and its audio as the
	// audio rendition) instead of encoding it; the other rungs are still
	// encoded from the decoded source, keyed on the source's keyframes so
	// that every rung's segments cut at the same times.
	Fast FastPath
}

// firstEncoded is the index of the first rung the pass encodes.
func (x Extras) firstEncoded() int {
	if x.Fast.Video {
		return 1
	}
	return 0
}

// storyboardBranch adds the sprite's branch to graph: from the lowest
// rung's [t<last>] (split off its own output), or from prev (the source)
// when no rung is encoded.
func (x Extras) storyboardBranch(graph []string, prev string, first, last int) []string {
	if x.Storyboard.Count <= 0 {
		return graph
	}
	if first <= last {
		graph = append(graph, fmt.Sprintf("[t%d]split=2[v%d][sb0]", last, last))
		prev = "[sb0]"
	}
	return append(graph, prev+x.Storyboard.filter()+"[sb]")
}

// storyboardOutput are the arguments of the sprite's output file, if any.
func (x Extras) storyboardOutput(info Info) []string {
	if x.Storyboard.Count <= 0 {
		return nil
	}
	return x.Storyboard.output("[sb]", x.StoryboardFile, info.Length())
}

// videoCodecs are the video encoder settings of n rungs: x264 for all, or
// on the fast path a copy of the source for rung 0 and x264 for the rest,
// every option given per stream (an encoder's option on the copied stream
// is an error).
func (x Extras) videoCodecs(n int) []string {
	if !x.Fast.Video {
		return x264()
	}
	args := []string{"-c:v:0", "copy"}
	for k := 1; k < n; k++ {
		v := "v:" + strconv.Itoa(k)
		args = append(args, "-c:"+v, "libx264", "-preset:"+v, "veryfast", "-profile:"+v, "high",
			"-pix_fmt:"+v, "yuv420p", "-g:"+v, strconv.Itoa(fastGOP))
	}
	return args
}

func (x Extras) audioCodec() []string {
	if x.Fast.Audio {
		return []string{"-c:a", "copy"}
	}
	return aac()
}

// keyFrames is -force_key_frames: a keyframe every segment, or on the fast
// path exactly where the copied source has its own.
func (x Extras) keyFrames() string {
	if x.Fast.Video {
		return "source"
	}
	return fmt.Sprintf("expr:gte(t,n_forced*%d)", segmentSeconds)
}
