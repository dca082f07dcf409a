package ffmpeg

import (
	"slices"
	"testing"
)

// TestEstimateSamples: one segment-long sample per two minutes of source,
// at least one, at most three, spread evenly and inside the source; none
// under 16 s.
func TestEstimateSamples(t *testing.T) {
	tests := []struct {
		length float64
		want   []sample
	}{
		{0, nil},
		{15.9, nil},
		{16, []sample{{6, 4}}},
		{200, []sample{{98, 4}}},
		{240, []sample{{58, 4}, {178, 4}}},
		{3600, []sample{{598, 4}, {1798, 4}, {2998, 4}}},
	}
	for _, tt := range tests {
		got := estimateSamples(tt.length)
		if !slices.Equal(got, tt.want) && (len(got) != 0 || len(tt.want) != 0) {
			t.Errorf("estimateSamples(%g) = %v, want %v", tt.length, got, tt.want)
		}
		for _, s := range got {
			if s.at < 0 || s.at+s.length > tt.length {
				t.Errorf("estimateSamples(%g): %v is outside the source", tt.length, s)
			}
		}
	}
}
