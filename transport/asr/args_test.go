package asr

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/transport/ffmpeg"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current builders")

// TestArgsGolden: the arguments of a run, one a line; model paths that
// hold the filter graph's special characters are escaped twice.
func TestArgsGolden(t *testing.T) {
	tests := []struct {
		name string
		cfg  PocketsphinxConfig
	}{
		{"debian_en_us", PocketsphinxConfig{}},
		{"escaped_paths", PocketsphinxConfig{Model: `/m/a:b,c'd[e]f;g\h`, Dict: "/m/x=y.dict", LM: "/m/lm bin", PauseLevel: "0.001"}},
	}
	info := ffmpeg.Info{Duration: 10, Width: 320, Height: 180, HasAudio: true, AudioStream: 1, MaxPixels: 7680 * 4320}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pocketsphinx{cfg: withDefaults(tt.cfg)}
			got := strings.Join(ffmpeg.AudioFilterArgs(ffmpeg.Input{Path: "/in/source.mp4", Demuxer: ffmpeg.DemuxMOV}, info, p.filter()), "\n") + "\n"
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./transport/asr -run ArgsGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("arguments differ from %s (rerun with -update if intended)\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}
