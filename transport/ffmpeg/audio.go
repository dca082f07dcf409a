package ffmpeg

import "fmt"

// AudioFilterArgs builds the arguments of a run that decodes the audio
// stream Probe saw in in (info.HasAudio must be set) through the audio
// filter graph filter and writes nothing (the null muxer): for filters that
// report what they measure, as frame metadata that ametadata writes to a
// file, so one pass over the soundtrack does the work. Progress goes to
// pipe:1 as in every run; no video is decoded beyond what opening the
// input takes, under the decoders' picture cap.
func AudioFilterArgs(in Input, info Info, filter string) []string {
	args := append(start(), in.capped(info.MaxPixels)...)
	return append(args,
		"-map", fmt.Sprintf("0:%d", info.AudioStream),
		"-af", filter,
		"-f", "null", "-",
	)
}
