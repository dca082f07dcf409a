package ffmpeg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// clip describes a test input generated from lavfi's testsrc2 (and a sine
// tone when Audio is set).
type clip struct {
	W, H    int
	Seconds float64
	Audio   bool
	Codecs  []string // encoder arguments; nil means H.264 ultrafast (+ AAC)
}

// makeClip writes c to dir/name and returns its path.
func makeClip(t *testing.T, dir, name string, c clip) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := []string{"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", c.W, c.H)}
	if c.Audio {
		args = append(args, "-f", "lavfi", "-i", "sine=frequency=440")
	}
	args = append(args, "-t", strconv.FormatFloat(c.Seconds, 'f', -1, 64))
	if c.Codecs != nil {
		args = append(args, c.Codecs...)
	} else {
		args = append(args, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
		if c.Audio {
			args = append(args, "-c:a", "aac")
		}
	}
	ffmpegOK(t, append(args, out)...)
	return out
}

// anamorphic are clip encoder arguments that store pixels a third wider
// than tall (sample aspect ratio 4:3, as HDV's).
var anamorphic = []string{"-vf", "setsar=4/3", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac"}

// rotated copies src to dir/name with a rotate=90 tag, which ffmpeg 5.1
// writes as a display matrix of +90° (counter-clockwise).
func rotated(t *testing.T, src, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	ffmpegOK(t, "-i", src, "-c", "copy", "-metadata:s:v:0", "rotate=90", out)
	return out
}

// ffmpegOK runs ffmpeg quietly and fails the test if it fails.
func ffmpegOK(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"-y", "-nostdin", "-hide_banner", "-loglevel", "error"}, args...)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %q: %v\n%s", args, err, out)
	}
}

// ffmpegToFile runs ffmpeg with its stdout (pipe:1) going to the file out.
func ffmpegToFile(t *testing.T, out string, args ...string) {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("ffmpeg", append([]string{"-nostdin", "-hide_banner", "-loglevel", "error"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = f, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg %q: %v\n%s", args, err, stderr.String())
	}
}

// input sniffs the file at path for ffmpeg, failing the test if it is
// refused.
func input(t *testing.T, path string) Input {
	t.Helper()
	in, err := OpenInput(path, "")
	if err != nil {
		t.Fatalf("OpenInput(%s): %v", path, err)
	}
	return in
}

// probePath is Probe of a file by its path, with no jail and no bounds.
func probePath(ctx context.Context, path string) (Info, error) {
	in, err := OpenInput(path, "")
	if err != nil {
		return Info{}, err
	}
	return Probe(ctx, in, ProbeOptions{})
}
