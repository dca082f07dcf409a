package ffmpeg

import (
	"fmt"
	"strconv"
)

// Extras are how the ladder's ffmpeg pass differs from the plain ladder
// (LadderArgs).
//
// The storyboard is not part of it: a second output whose tile filter
// holds its one frame back until the end kept ffmpeg 5.1 from reporting
// -progress (out_time 0 until the last second), so the sprite is made by
// the stills' pass (StillsArgs) or its own (StoryboardArgs).
type Extras struct {
	// Fast copies the source's video as the top rung (and its audio as the
	// audio rendition) instead of encoding it; the other rungs are still
	// encoded from the decoded source, keyed on the source's keyframes so
	// that every rung's segments cut at the same times.
	Fast FastPath

	// Lane names the second of the two processes of a ladder split into
	// lanes (SplitLadder), writing into the same directory beside the
	// first: its master playlist is LaneMaster(Lane) and its audio
	// rendition LaneAudio(Lane), both dropped when MergeMasters has made
	// the one master. "" is the first lane, or the only one.
	Lane string
}

// firstEncoded is the index of the first rung the pass encodes.
func (x Extras) firstEncoded() int {
	if x.Fast.Video {
		return 1
	}
	return 0
}

// videoCodecs are the video encoder settings of n rungs: x264 for all, or
// on the fast path a copy of the source for rung 0, its filler data
// dropped, and x264 for the rest, every option given per stream (an
// encoder's option on the copied stream is an error).
func (x Extras) videoCodecs(n int) []string {
	if !x.Fast.Video {
		return x264()
	}
	args := []string{"-c:v:0", "copy", "-bsf:v:0", dropFiller}
	for k := 1; k < n; k++ {
		v := "v:" + strconv.Itoa(k)
		// Each frame at its own time, as the copy has it: at a constant
		// rate (cfr, the HLS muxer's default) ffmpeg would repeat the first
		// frame from the file's start when the video starts later, and
		// the first segments would not end together; at vfr in the
		// encoder's default time base (a tick per frame of the average
		// rate) a wavering rate's frames would move onto that grid, and
		// keyframes with them. 90 kHz holds MPEG-TS's clock, Matroska's
		// and FLV's milliseconds and 24, 25, 29.97, 30, 50 and 60 fps
		// exactly, 23.976 and 59.94 within half a tick (6 µs).
		args = append(args, "-c:"+v, "libx264", "-preset:"+v, "veryfast", "-profile:"+v, "high",
			"-pix_fmt:"+v, "yuv420p", "-g:"+v, strconv.Itoa(fastGOP), "-fps_mode:"+v, "vfr", "-enc_time_base:"+v, "1/90000")
	}
	return args
}

// audioCodec is the audio rendition's encoder: AAC, or on the fast path a
// copy of the source's AAC, its ADTS headers (MPEG-TS) turned into the
// configuration an MP4 keeps (the filter passes MP4's own AAC as it is).
func (x Extras) audioCodec() []string {
	if x.Fast.Audio {
		return []string{"-c:a", "copy", "-bsf:a", "aac_adtstoasc"}
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
