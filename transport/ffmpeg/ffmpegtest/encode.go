package ffmpegtest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// Encode writes a testsrc2 clip of w×h at 25 fps, seconds long, with a
// sine tone when audio, in the container name's extension picks, encoded
// with the output options given (e.g. "-c:v", "libx264", "-b:v", "400k"),
// and returns its path. Without "-c:v" in opts ffmpeg's default encoder
// for the container is used.
func Encode(t testing.TB, dir, name string, w, h int, seconds float64, audio bool, opts ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := []string{"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", w, h)}
	if audio {
		args = append(args, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000")
	}
	args = append(args, "-t", strconv.FormatFloat(seconds, 'f', -1, 64))
	args = append(args, opts...)
	Run(t, append(args, out)...)
	return out
}

// H264Options are the output options of a clip the fast path takes at
// 640×360 (the top rung's size, within its 856 kbit/s cap): 8-bit
// yuv420p H.264 with a keyframe every 2 s and 400 kbit/s, Constrained
// Baseline (ultrafast) so that a copy is told from kino's High encode, and
// AAC LC when there is audio.
func H264Options() []string {
	return []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "50",
		"-b:v", "400k", "-maxrate", "500k", "-bufsize", "800k", "-c:a", "aac", "-ac", "2"}
}
