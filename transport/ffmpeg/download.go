package ffmpeg

import (
	"path"
)

// downloadMaxShort is the largest short side of the download rendition.
const downloadMaxShort = 1080

// DownloadRung is the rung the download rendition copies: the highest one
// whose short side is at most 1080 (false when there is none, which
// Ladder never makes).
func DownloadRung(rungs []Rung) (Rung, bool) {
	for _, r := range rungs {
		if min(r.Width, r.Height) <= downloadMaxShort {
			return r, true
		}
	}
	return Rung{}, false
}

// DownloadArgs builds the remux of one rung's HLS output (and the shared
// audio rendition when hasAudio) under hlsDir into an MP4 at out, its moov
// atom first: no encoding, only the segments' packets copied (from
// MPEG-TS segments the audio's ADTS headers are turned into the MP4's
// config; fMP4's audio passes as it is). The playlists are ffmpeg's
// own, read as HLS through the file protocol only.
func DownloadArgs(hlsDir string, rung Rung, hasAudio bool, out string) []string {
	playlist := func(name string) []string {
		return []string{"-f", "hls", "-protocol_whitelist", "file", "-i", "file:" + path.Join(hlsDir, name, variantPlaylist)}
	}
	args := append(start(), playlist(rung.Name)...)
	if hasAudio {
		args = append(args, playlist(AudioRendition)...)
	}
	args = append(args, "-map", "0:v:0")
	if hasAudio {
		args = append(args, "-map", "1:a:0", "-bsf:a", "aac_adtstoasc")
	}
	return append(args, "-c", "copy", "-movflags", "+faststart", "-f", "mp4", out)
}
