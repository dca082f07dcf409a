package ffmpeg

import (
	"context"
	"testing"

	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// BenchmarkProbe probes a 2 s 320x180 clip with audio (what an upload's
// probe costs before its encode starts).
func BenchmarkProbe(b *testing.B) {
	path := ffmpegtest.Clip(b, b.TempDir(), "source.mp4", 320, 180, 2, true)
	in := Input{Path: path, Demuxer: DemuxMOV}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Probe(context.Background(), in, ProbeOptions{Bounds: DefaultBounds()}); err != nil {
			b.Fatal(err)
		}
	}
}
