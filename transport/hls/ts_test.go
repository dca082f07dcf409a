package hls

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// testdata/segment.ts is half a second of video and audio written by
// ffmpeg's MPEG-TS muxer with -output_ts_offset 5; ffprobe gives its
// start_time as 6.376778 s (the audio's; the video starts at 6.4 s).
func TestStartPTS(t *testing.T) {
	data, err := os.ReadFile("testdata/segment.ts")
	if err != nil {
		t.Fatal(err)
	}
	got, err := StartPTS(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(573910); got < want-1 || got > want+1 {
		t.Fatalf("StartPTS = %d (%.6f s); want %d (6.376778 s, ffprobe's start_time)", got, float64(got)/90000, want)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"text", bytes.Repeat([]byte("WEBVTT\n"), 100)},
		{"cut inside the first packet", data[:100]},
		{"null packets only", bytes.Repeat(append([]byte{0x47, 0x1f, 0xff, 0x10}, make([]byte, 184)...), 10)},
	} {
		if _, err := StartPTS(bytes.NewReader(tc.data)); err == nil {
			t.Errorf("%s: StartPTS found a time", tc.name)
		} else if tc.name != "text" && !errors.Is(err, ErrNoPTS) {
			t.Errorf("%s: %v; want ErrNoPTS", tc.name, err)
		}
	}
}
