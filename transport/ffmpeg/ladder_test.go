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
				if r.Bitrate <= 0 || r.MaxRate != (r.Bitrate*107+50)/100 || r.BufSize != (r.Bitrate*3+1)/2 {
					t.Errorf("%s: bitrate %d, maxrate %d, bufsize %d: want maxrate 1.07× and bufsize 1.5× bitrate",
						r.Name, r.Bitrate, r.MaxRate, r.BufSize)
				}
			}
			if s := strings.Join(got, ", "); s != tt.want {
				t.Errorf("Ladder(%dx%d) = %s\nwant %s", tt.info.Width, tt.info.Height, s, tt.want)
			}
			for i := 1; i < len(rungs); i++ {
				if rungs[i].Bitrate >= rungs[i-1].Bitrate {
					t.Errorf("bitrate of %s (%d) not below %s (%d)", rungs[i].Name, rungs[i].Bitrate, rungs[i-1].Name, rungs[i-1].Bitrate)
				}
			}
		})
	}
}

func TestLadderBitrates(t *testing.T) {
	want := map[string][3]int{
		"2160p": {16000, 17120, 24000},
		"1440p": {9000, 9630, 13500},
		"1080p": {5000, 5350, 7500},
		"720p":  {2800, 2996, 4200},
		"480p":  {1400, 1498, 2100},
		"360p":  {800, 856, 1200},
		"240p":  {400, 428, 600},
	}
	for _, r := range Ladder(Info{Width: 3840, Height: 2160}) {
		if got := [3]int{r.Bitrate, r.MaxRate, r.BufSize}; got != want[r.Name] {
			t.Errorf("%s: bitrate/maxrate/bufsize %v, want %v", r.Name, got, want[r.Name])
		}
	}
	// Below 240 the bitrate shrinks with the short side, down to 200.
	for _, tt := range []struct {
		w, h, kbps int
	}{{400, 200, 333}, {160, 90, 200}, {2, 2, 200}} {
		r := Ladder(Info{Width: tt.w, Height: tt.h})
		if len(r) != 1 || r[0].Bitrate != tt.kbps {
			t.Errorf("Ladder(%dx%d) = %+v, want one rung at %d kbit/s", tt.w, tt.h, r, tt.kbps)
		}
	}
	if r := Ladder(Info{}); r != nil {
		t.Errorf("Ladder of a sizeless Info = %+v, want nil", r)
	}
}
