package ffmpeg

import (
	"fmt"
	"strings"
	"testing"
)

func TestLadder(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string // "name WxH" of each rung, highest first
	}{
		{"2160p landscape", Info{Width: 3840, Height: 2160},
			"2160p 3840x2160, 1440p 2560x1440, 1080p 1920x1080, 720p 1280x720, 480p 854x480, 360p 640x360, 240p 426x240"},
		{"720p landscape", Info{Width: 1280, Height: 720},
			"720p 1280x720, 480p 854x480, 360p 640x360, 240p 426x240"},
		{"odd just below 720", Info{Width: 1279, Height: 719},
			"480p 854x480, 360p 640x360, 240p 426x240"},
		{"tiny below 240", Info{Width: 160, Height: 90},
			"90p 160x90"},
		{"tiny odd below 240", Info{Width: 161, Height: 91},
			"90p 160x90"},
		{"portrait phone", Info{Width: 720, Height: 1280, Rotation: 90},
			"720p 720x1280, 480p 480x854, 360p 360x640, 240p 240x426"},
		{"4:3", Info{Width: 640, Height: 480},
			"480p 640x480, 360p 480x360, 240p 320x240"},
		{"square", Info{Width: 500, Height: 500},
			"480p 480x480, 360p 360x360, 240p 240x240"},
		{"between steps", Info{Width: 426, Height: 250},
			"240p 408x240"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rungs := Ladder(tt.info)
			var got []string
			for _, r := range rungs {
				got = append(got, fmt.Sprintf("%s %dx%d", r.Name, r.Width, r.Height))
				if r.Width%2 != 0 || r.Height%2 != 0 {
					t.Errorf("%s: odd size %dx%d", r.Name, r.Width, r.Height)
				}
				if r.CRF <= 0 || r.Bitrate != 0 || r.MaxRate <= 0 || r.BufSize != r.MaxRate {
					t.Errorf("%s: crf %d, bitrate %d, maxrate %d, bufsize %d: want a quality target under a cap, with a second of the cap as buffer",
						r.Name, r.CRF, r.Bitrate, r.MaxRate, r.BufSize)
				}
			}
			if s := strings.Join(got, ", "); s != tt.want {
				t.Errorf("Ladder(%dx%d) = %s\nwant %s", tt.info.Width, tt.info.Height, s, tt.want)
			}
			for i := 1; i < len(rungs); i++ {
				if rungs[i].MaxRate >= rungs[i-1].MaxRate {
					t.Errorf("cap of %s (%d) not below %s (%d)", rungs[i].Name, rungs[i].MaxRate, rungs[i-1].Name, rungs[i-1].MaxRate)
				}
				if rungs[i].CRF > rungs[i-1].CRF {
					t.Errorf("quality target of %s (CRF %d) below %s's (CRF %d)", rungs[i].Name, rungs[i].CRF, rungs[i-1].Name, rungs[i-1].CRF)
				}
			}
		})
	}
}

func TestLadderRates(t *testing.T) {
	want := map[string][3]int{ // CRF, cap, buffer
		"2160p": {23, 16000, 16000},
		"1440p": {23, 9000, 9000},
		"1080p": {23, 5000, 5000},
		"720p":  {22, 2800, 2800},
		"480p":  {22, 1400, 1400},
		"360p":  {21, 800, 800},
		"240p":  {20, 400, 400},
	}
	for _, r := range Ladder(Info{Width: 3840, Height: 2160}) {
		if got := [3]int{r.CRF, r.MaxRate, r.BufSize}; got != want[r.Name] {
			t.Errorf("%s: crf/maxrate/bufsize %v, want %v", r.Name, got, want[r.Name])
		}
	}
	// Below 240 the cap shrinks with the short side, down to 200.
	for _, tt := range []struct {
		w, h, kbps int
	}{{400, 200, 333}, {160, 90, 200}, {2, 2, 200}} {
		r := Ladder(Info{Width: tt.w, Height: tt.h})
		if len(r) != 1 || r[0].MaxRate != tt.kbps || r[0].CRF != 20 {
			t.Errorf("Ladder(%dx%d) = %+v, want one rung at CRF 20 capped at %d kbit/s", tt.w, tt.h, r, tt.kbps)
		}
	}
	if r := Ladder(Info{}); r != nil {
		t.Errorf("Ladder of a sizeless Info = %+v, want nil", r)
	}
}

// TestMaxCopyLevel: a copied rung keeps a level of at most 4.2, or the
// least its size and rate need when that is higher, as x264 gives kino's
// own rungs.
func TestMaxCopyLevel(t *testing.T) {
	for _, tt := range []struct {
		w, h int
		fps  float64
		want int
	}{
		{640, 360, 30, 42}, {1920, 1080, 30, 42}, {1920, 1080, 60, 42}, {1080, 1920, 60, 42},
		{2560, 1080, 30, 50}, {1080, 2400, 30, 50}, {2560, 1440, 30, 50}, {2560, 1440, 60, 51},
		{3840, 2160, 30, 51}, {2160, 3840, 60, 52},
	} {
		if got := maxCopyLevel(Ladder(Info{Width: tt.w, Height: tt.h})[0], tt.fps); got != tt.want {
			t.Errorf("maxCopyLevel(%dx%d at %g) = %d, want %d", tt.w, tt.h, tt.fps, got, tt.want)
		}
	}
	if got := levelName(51); got != "5.1" {
		t.Errorf("levelName(51) = %q", got)
	}
}
