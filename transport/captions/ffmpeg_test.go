package captions

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFFmpegReadsOutput has the real ffmpeg read each golden WebVTT file
// and write it as SRT: it reads without a warning and finds every cue.
func TestFFmpegReadsOutput(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("no ffmpeg on PATH")
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tr, _, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), ffmpeg, "-nostdin", "-v", "warning", "-f", "webvtt", "-i", file, "-f", "srt", "-")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || stderr.Len() > 0 {
				t.Fatalf("ffmpeg: %v\n%s", err, stderr.Bytes())
			}
			if got := strings.Count(stdout.String(), " --> "); got != len(tr.Cues) {
				t.Errorf("ffmpeg read %d cues, want %d:\n%s", got, len(tr.Cues), stdout.Bytes())
			}
		})
	}
}
