package ffmpeg

import (
	"slices"
	"testing"
)

// TestEstimateSamples: one segment-long sample per two minutes begun, at
// most three and no more than three 1080p samples' pixels, spread evenly,
// on whole seconds inside the source; none under 8 s.
func TestEstimateSamples(t *testing.T) {
	tests := []struct {
		length float64
		w, h   int
		want   []sample
	}{
		{0, 1920, 1080, nil},
		{7.9, 1920, 1080, nil},
		{8, 1920, 1080, []sample{{2, 4}}},
		{10, 1920, 1080, []sample{{3, 4}}},
		{15.9, 1920, 1080, []sample{{5, 4}}},
		{16, 1920, 1080, []sample{{6, 4}}},
		{16.9, 640, 360, []sample{{6, 4}}},
		{120, 1920, 1080, []sample{{58, 4}}},
		{130, 1920, 1080, []sample{{30, 4}, {95, 4}}},
		{240, 1280, 720, []sample{{58, 4}, {178, 4}}},
		{3600, 1920, 1080, []sample{{598, 4}, {1798, 4}, {2998, 4}}},
		{3600, 2560, 1440, []sample{{1798, 4}}},
		{3600, 3840, 2160, []sample{{1798, 4}}},
	}
	for _, tt := range tests {
		got := estimateSamples(tt.length, tt.w, tt.h)
		if !slices.Equal(got, tt.want) {
			t.Errorf("estimateSamples(%g, %dx%d) = %v, want %v", tt.length, tt.w, tt.h, got, tt.want)
		}
		for _, s := range got {
			if s.at < 0 || float64(s.at+s.length) > tt.length {
				t.Errorf("estimateSamples(%g): %v is outside the source", tt.length, s)
			}
		}
	}
}

// TestSecondBytes: the bytes of whole seconds from the first (the floor of
// the smallest timestamp), only where the scan covered every one; none
// from timestamps no int64 second holds (a hostile file's, at 2^63: their
// differences overflowed and made a negative slice length).
func TestSecondBytes(t *testing.T) {
	var k keyScan
	for i, size := range []int64{10, 20, 30, 40, 50} {
		k.add(100+float64(i)+0.5, true, size, i == 0)
	}
	var s Source
	k.fill(&s, 105)
	for _, tt := range []struct {
		from, length int
		want         int64
		ok           bool
	}{{0, 5, 150, true}, {1, 3, 90, true}, {3, 2, 90, true}, {4, 2, 0, false}, {-1, 2, 0, false}} {
		if got, ok := s.seconds.bytesIn(tt.from, tt.length); got != tt.want || ok != tt.ok {
			t.Errorf("bytesIn(%d, %d) = %d, %t; want %d, %t", tt.from, tt.length, got, ok, tt.want, tt.ok)
		}
	}
	if origin, ok := s.seconds.start(); origin != 100 || !ok {
		t.Errorf("start() = %d, %t; want 100, true", origin, ok)
	}
	if _, ok := (*secondBytes)(nil).bytesIn(0, 1); ok {
		t.Error("no scan covers a second")
	}
	var hostile keyScan
	hostile.add(9223372036854775808, true, 100, true)
	hostile.add(9223372036854774784, true, 100, true)
	var h Source
	hostile.fill(&h, 9223372036854775808)
	if h.seconds != nil {
		t.Errorf("seconds from timestamps at 2^63: %v", h.seconds)
	}
}

// TestRungsFollowTheUploadedRate: the encoded rungs' caps are scaled by the
// source's rate as uploaded, filler data included, not by the smaller
// rate its copy keeps: a constant-rate source padded where it is still
// spends the whole rate where it moves.
func TestRungsFollowTheUploadedRate(t *testing.T) {
	ladder := Ladder(Info{Width: 1280, Height: 720}) // 720p 2800, 480p 1400, 360p 800, 240p 400
	var got []int
	for _, r := range (FastPath{Video: true, Kbps: 280, uploadedKbps: 1400}).Rungs(ladder) {
		got = append(got, r.MaxRate)
	}
	if want := []int{2800, 700, 400, 200}; !slices.Equal(got, want) {
		t.Errorf("caps %v, want %v (half the caps: the uploaded rate's share)", got, want)
	}
}
