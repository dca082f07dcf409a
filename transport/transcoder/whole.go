package transcoder

import (
	"os"
	"path"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/hls"
	"github.com/kino-video/kino/transport/media"
)

// checkWhole fails an attempt whose ladder holds much less than the file
// announces: a file cut short after an index that promises more (an mp4
// with its moov first), or claiming more than its frames cover, probes
// fine and encodes "successfully" up to the cut.
//
// What the ladder holds is measured on what it wrote, the segments its
// media playlists list, not on ffmpeg's -progress out_time: that is the
// furthest end of any output stream of the pass, and the storyboard
// sprite's single frame ends a whole tile step past the last picture it
// took (a 1.3 s stub of a 3 s file reports 2.0 s), whether the top rung
// is encoded or copied by the fast path.
//
// Playlists that cannot be read, or list no segment, are not judged here:
// verifyOutputs reports them as incomplete outputs (transient).
func checkWhole(work string, info ffmpeg.Info, rungs []ffmpeg.Rung) error {
	held, ok := ladderSeconds(work, rungs, info.HasAudio)
	if !ok || held <= 0 {
		// Nothing written at all is not the file's doing (a full disk
		// leaves playlists without segments): verifyOutputs reports it.
		return nil
	}
	if ffmpeg.Short(info.Duration, held) {
		return domain.E("transcode", domain.Unsupported, "the file is truncated or corrupt: it holds %.1f s of the %.1f s it announces", held, info.Duration)
	}
	return nil
}

// heldDuration is the duration a completed video reports: what the file
// announces, unless its ladder holds clearly less (a file cut short by
// less than checkWhole fails, up to 10%): then what the ladder holds, so
// the record, the playlists, the storyboard and the download agree.
// Half a second of slack keeps the announced length of a whole file, whose
// segments may end a frame or an audio packet short of it.
func heldDuration(info ffmpeg.Info, held float64) float64 {
	if held > 0 && held < info.Duration-0.5 {
		return held
	}
	return info.Duration
}

// ladderSeconds is the longest of the ladder's renditions (each rung, and
// the audio when there is one) in seconds: the sum of the durations its
// playlist gives its segments. ok is false when a playlist is missing or
// does not parse.
func ladderSeconds(work string, rungs []ffmpeg.Rung, audio bool) (held float64, ok bool) {
	root, err := os.OpenRoot(work)
	if err != nil {
		return 0, false
	}
	defer root.Close()
	names := make([]string, 0, len(rungs)+1)
	for _, r := range rungs {
		names = append(names, r.Name)
	}
	if audio {
		names = append(names, ffmpeg.AudioRendition)
	}
	for _, name := range names {
		data, err := readPlaylist(root, path.Join(media.HLSDir, name, "index.m3u8"))
		if err != nil {
			return 0, false
		}
		pl, err := hls.ParseMedia(data)
		if err != nil {
			return 0, false
		}
		held = max(held, pl.Seconds())
	}
	return held, len(names) > 0
}
