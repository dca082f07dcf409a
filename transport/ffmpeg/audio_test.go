package ffmpeg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAudioFilterArgsGolden: the audio stream Probe checked is mapped (a
// cover picture first, the audio third), under the picture cap.
func TestAudioFilterArgsGolden(t *testing.T) {
	info := Info{Duration: 10, Width: 320, Height: 180, HasAudio: true, VideoStream: 1, AudioStream: 2, MaxPixels: 7680 * 4320}
	got := strings.Join(AudioFilterArgs(Input{Path: "/in/source.mp4", Demuxer: DemuxMOV}, info, "silencedetect,ametadata=mode=print:file=out.txt"), "\n") + "\n"
	path := filepath.Join("testdata", "audio_filter.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./transport/ffmpeg -run AudioFilter -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("arguments differ from %s (rerun with -update if intended)\n--- got\n%s--- want\n%s", path, got, want)
	}
}
