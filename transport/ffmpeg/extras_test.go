package ffmpeg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLadderArgsExtrasGolden: the ladder's pass on the fast path (two
// rungs, or the one rung copied); without extras it is HLSArgs exactly.
// No storyboard branch: the sprite has its own pass (StoryboardArgs).
func TestLadderArgsExtrasGolden(t *testing.T) {
	in := Input{Path: "/in/source.mp4", Demuxer: DemuxMOV}
	h264 := Info{Duration: 10, Span: 10, Frames: 250, Width: 640, Height: 360, HasAudio: true, AudioStream: 1, FrameRate: 25, VideoCodec: "h264"}
	tiny := Info{Duration: 3, Span: 3, Frames: 75, Width: 200, Height: 112, FrameRate: 25, VideoCodec: "h264"}
	tests := []struct {
		name string
		info Info
		x    func(rungs []Rung) Extras
	}{
		{"extras_fast_640x360", h264, func(r []Rung) Extras { return Extras{Fast: FastPath{Video: true, Audio: true}} }},
		{"extras_fast_one_rung_200x112", tiny, func(r []Rung) Extras { return Extras{Fast: FastPath{Video: true}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rungs := Ladder(tt.info)
			got := strings.Join(LadderArgs(in, "/out", tt.info, rungs, tt.x(rungs)), "\n") + "\n"
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./transport/ffmpeg -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("arguments differ from %s (rerun with -update if intended)\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
	info := Info{Duration: 4, Width: 640, Height: 360, HasAudio: true, AudioStream: 1}
	if a, b := strings.Join(LadderArgs(in, "/out", info, nil, Extras{}), " "), strings.Join(HLSArgs(in, "/out", info, nil), " "); a != b {
		t.Errorf("LadderArgs without extras:\n%s\nHLSArgs:\n%s", a, b)
	}
}

func TestPlanStoryboard(t *testing.T) {
	tests := []struct {
		name                    string
		length                  float64
		w, h                    int
		step, count, cols, rows int
		tileW, tileH            int
	}{
		{"half a second", 0.5, 426, 240, 1000, 1, 1, 1, 160, 90},
		{"21 s: one a second", 21, 426, 240, 1000, 21, 10, 3, 160, 90},
		{"21.02 s: the last 20 ms in the last cue", 21.02, 426, 240, 1000, 21, 10, 3, 160, 90},
		{"21.2 s: a tile for the last 200 ms", 21.2, 426, 240, 1000, 22, 10, 3, 160, 90},
		{"exactly 100 s", 100, 426, 240, 1000, 100, 10, 10, 160, 90},
		{"an hour: 100 tiles", 3600, 426, 240, 36000, 100, 10, 10, 160, 90},
		{"150.5 s", 150.5, 426, 240, 1505, 100, 10, 10, 160, 90},
		{"portrait", 5, 240, 426, 1000, 5, 5, 1, 160, 284},
		{"narrower than a tile", 5, 120, 68, 1000, 5, 5, 1, 120, 68},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := PlanStoryboard(Info{Duration: tt.length}, tt.w, tt.h)
			if s.StepMS != tt.step || s.Count != tt.count || s.Cols != tt.cols || s.Rows != tt.rows || s.TileW != tt.tileW || s.TileH != tt.tileH {
				t.Fatalf("plan %+v", s)
			}
			if s.Count > s.Cols*s.Rows || s.Count <= (s.Rows-1)*s.Cols {
				t.Errorf("%d tiles on a %dx%d grid", s.Count, s.Cols, s.Rows)
			}
			vtt := string(s.VTT("storyboard.jpg"))
			if n := strings.Count(vtt, " --> "); n != s.Count {
				t.Errorf("%d cues, want %d", n, s.Count)
			}
			x, y, w, h := s.Tile(s.Count - 1)
			if x+w > s.Width() || y+h > s.Height() {
				t.Errorf("last tile %d,%d %dx%d outside %dx%d", x, y, w, h, s.Width(), s.Height())
			}
			if last := "--> " + vttTime(tt.length) + "\n"; !strings.Contains(vtt, last) {
				t.Errorf("no cue ends at the video's end (%q):\n%s", last, vtt)
			}
		})
	}
}

func TestDownloadRung(t *testing.T) {
	for _, tt := range []struct {
		w, h int
		want string
	}{{3840, 2160, "1080p"}, {2160, 3840, "1080p"}, {2560, 1440, "1080p"}, {1920, 1080, "1080p"}, {1280, 720, "720p"}, {200, 112, "112p"}} {
		r, ok := DownloadRung(Ladder(Info{Width: tt.w, Height: tt.h}))
		if !ok || r.Name != tt.want || min(r.Width, r.Height) > 1080 {
			t.Errorf("%dx%d: download rung %+v, want %s", tt.w, tt.h, r, tt.want)
		}
	}
}
