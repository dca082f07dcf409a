package ffmpeg

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current builders")

// separator divides the HLS, thumbnail and preview arguments in a golden
// file; no argument is ever this string.
const separator = "----"

func TestArgsGolden(t *testing.T) {
	tests := []struct {
		name string
		info Info
	}{
		{"landscape_1280x720_audio", Info{Duration: 10, Width: 1280, Height: 720, HasAudio: true, AudioStream: 1, FrameRate: 25, VideoCodec: "h264", MaxPixels: 7680 * 4320}},
		// A cover picture is stream 0 and the audio stream 2: exactly the
		// streams Probe checked are mapped. 61 frames over 59 minutes are
		// encoded at 1 frame per second, not at the nominal 30.
		{"cover_first_sparse_61_frames", Info{Duration: 3540, Width: 3840, Height: 2160, HasAudio: true, FrameRate: 30, EncodeRate: 30, VideoCodec: "h264",
			VideoStream: 1, AudioStream: 2, MaxPixels: 7680 * 4320, Frames: 61, Span: 3540, MaxGap: 59}},
		// 119.88 fps, the video 23 ms in: every second frame of its grid,
		// the lead given back.
		{"mkv_1080p_119.88_fps", Info{Duration: 10, Width: 1920, Height: 1080, HasAudio: true, AudioStream: 1, FrameRate: 119.88, EncodeRate: 119.88,
			VideoCodec: "h264", Frames: 1199, Span: 10, Source: Source{Lead: 0.023}}},
		{"landscape_1280x720_no_audio", Info{Duration: 10, Width: 1280, Height: 720, FrameRate: 25, VideoCodec: "h264"}},
		{"portrait_phone_720x1280_rotated", Info{Duration: 12.5, Width: 720, Height: 1280, Rotation: 90, HasAudio: true, AudioStream: 1, FrameRate: 29.97, VideoCodec: "h264"}},
		{"odd_1279x719", Info{Duration: 7.3, Width: 1279, Height: 719, HasAudio: true, AudioStream: 1, FrameRate: 25, VideoCodec: "h264"}},
		{"tiny_160x90_short", Info{Duration: 0.5, Width: 160, Height: 90, HasAudio: true, AudioStream: 1, FrameRate: 25, VideoCodec: "h264"}},
		{"four_three_640x480", Info{Duration: 60, Width: 640, Height: 480, HasAudio: true, AudioStream: 1, FrameRate: 30, VideoCodec: "mpeg4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			lines = append(lines, HLSArgs(Input{Path: "/in/source.mp4", Demuxer: DemuxMOV}, "/out", tt.info, Ladder(tt.info))...)
			lines = append(lines, separator)
			lines = append(lines, ThumbnailArgs(Input{Path: "/in/source.mp4", Demuxer: DemuxMOV}, "/out/thumbnail.jpg", tt.info)...)
			lines = append(lines, separator)
			lines = append(lines, PreviewArgs(Input{Path: "/in/source.mp4", Demuxer: DemuxMOV}, "/out/preview.mp4", tt.info)...)
			lines = append(lines, separator)
			lines = append(lines, AnimatedArgs(Input{Path: "/in/source.mp4", Demuxer: DemuxMOV}, "/out/preview.webp", tt.info, ThumbnailAt(tt.info, nil))...)
			got := strings.Join(lines, "\n") + "\n"

			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
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
}

// TestHLSArgsWithoutRungsUsesLadder: an empty ladder is not an ffmpeg
// command that fails later.
func TestHLSArgsWithoutRungsUsesLadder(t *testing.T) {
	info := Info{Duration: 2, Width: 640, Height: 360, HasAudio: true}
	got := strings.Join(HLSArgs(Input{Path: "in.mp4", Demuxer: DemuxMOV}, "out", info, nil), "\n")
	want := strings.Join(HLSArgs(Input{Path: "in.mp4", Demuxer: DemuxMOV}, "out", info, Ladder(info)), "\n")
	if got != want {
		t.Errorf("HLSArgs(nil rungs) =\n%s\nwant\n%s", got, want)
	}
}

// TestOutputRate: the ladder's FRAME-RATE is the rate ffmpeg encodes at
// (or the probed average, if higher), or the rate a far sparser file, or
// one over 60 fps, is encoded at.
func TestOutputRate(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want float64
	}{
		{"steady", Info{FrameRate: 25, EncodeRate: 25, Frames: 250, Span: 10}, 25},
		{"variable, encoded at its nominal rate", Info{FrameRate: 29.5, EncodeRate: 30, Frames: 295, Span: 10}, 30},
		{"no guess from the headers", Info{FrameRate: 24, Frames: 240, Span: 10}, 24},
		{"sparse: a frame every 10 s at a nominal 25", Info{FrameRate: 25, EncodeRate: 25, Frames: 10, Span: 100}, 1},
		// Over 60: every second (third...) frame of the grid kept, else held at 60.
		{"120 fps", Info{FrameRate: 120, EncodeRate: 120, Frames: 1200, Span: 10}, 60},
		{"119.88 fps", Info{FrameRate: 119.88, EncodeRate: 119.88, Frames: 1199, Span: 10}, 60000.0 / 1001},
		{"100 fps", Info{FrameRate: 100, EncodeRate: 100, Frames: 1000, Span: 10}, 50},
		{"144 fps", Info{FrameRate: 144, EncodeRate: 144, Frames: 1440, Span: 10}, 48},
		{"90 fps: held at 60", Info{FrameRate: 90, EncodeRate: 90, Frames: 900, Span: 10}, 60},
		{"40 a second on a 120 grid", Info{FrameRate: 120, EncodeRate: 120, Frames: 400, Span: 10}, 60},
		{"60 a second on a 120 grid", Info{FrameRate: 60, EncodeRate: 120, Frames: 600, Span: 10}, 60},
		{"headers say 60 over 120 a second", Info{FrameRate: 120, EncodeRate: 60, Frames: 1200, Span: 10}, 60},
		{"60.3 fps on average: kept", Info{FrameRate: 60.3, EncodeRate: 60, Frames: 603, Span: 10}, 60.3},
		{"unknown", Info{}, 0},
	}
	for _, tt := range tests {
		if got := OutputRate(tt.info); got != tt.want {
			t.Errorf("%s: OutputRate = %g, want %g", tt.name, got, tt.want)
		}
	}
}

// TestExactRate: a probed rate (three decimals) is read as the rational
// it stands for.
func TestExactRate(t *testing.T) {
	for in, want := range map[float64]string{
		30: "30", 120: "120", 23.976: "24000/1001", 29.97: "30000/1001", 59.94: "60000/1001",
		119.88: "120000/1001", 12.5: "25/2", 120.5: "241/2", 29.5: "59/2", 0.333: "333/1000",
	} {
		if got := exactRate(in).String(); got != want {
			t.Errorf("exactRate(%g) = %s, want %s", in, got, want)
		}
	}
}

// TestScaleParents: each rung is scaled from the nearest rung above it in
// its process whose short side is a whole multiple of its own, else from
// the source if its short side is one, else from the rung just above.
func TestScaleParents(t *testing.T) {
	for _, tt := range []struct {
		name   string
		w, h   int
		lowest int // rungs from this index on (a lane)
		first  int
		want   []int
	}{
		// 720p and 480p from the rung above (no whole multiple), 360p
		// from 720p, 240p from 480p.
		{"1080p", 1920, 1080, 0, 0, []int{-1, 0, 1, 1, 2}},
		// The copied 720p is the source's size: 360p from the source.
		{"720p, top rung copied", 1280, 720, 0, 1, []int{-1, -1, -1, 1}},
		{"portrait 1080p", 1080, 1920, 0, 0, []int{-1, 0, 1, 1, 2}},
		// The low lane of a 720p ladder: 240p from the source (3:1), not
		// from 360p (3:2); of a 1080p one, from 360p (1080 is no whole
		// multiple of 240).
		{"720p's low lane", 1280, 720, 2, 0, []int{-1, -1}},
		{"1080p's low lane", 1920, 1080, 3, 0, []int{-1, 0}},
		// 1080p from 2160p, 720p and 480p from 1440p.
		{"2160p", 3840, 2160, 0, 0, []int{-1, 0, 0, 1, 1, 3, 4}},
		{"480p", 854, 480, 0, 0, []int{-1, 0, 0}},
		{"200p", 356, 200, 0, 0, []int{-1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rungs := Ladder(Info{Width: tt.w, Height: tt.h})[tt.lowest:]
			if got := scaleParents(rungs, tt.first, min(tt.w, tt.h)); !slices.Equal(got, tt.want) {
				t.Errorf("scaleParents(%s, %d) = %v, want %v", tt.name, tt.first, got, tt.want)
			}
		})
	}
}

// TestRateCap: a far sparser file is held to its frames' rate; a faster
// one keeps a frame a slot of its output rate (a whole fraction of its
// grid), encoded at that rate; any other is left to ffmpeg.
func TestRateCap(t *testing.T) {
	keep := func(p, early string) string {
		p, early = "("+p+")", "("+early+")"
		return "select='if(eq(n,0)+isnan(ld(0)),st(0,t+" + p + "),if(gte(t-ld(0),-" + early + "),st(0,ld(0)+" + p +
			"*(1+floor((t-ld(0)+" + early + ")/" + p + "))),0))'"
	}
	for _, tt := range []struct {
		name string
		info Info
		want string
		rate []string // rateCap's output options
	}{
		{"steady 30", Info{FrameRate: 30, EncodeRate: 30, Frames: 300, Span: 10}, "", nil},
		{"60", Info{FrameRate: 60, EncodeRate: 60, Frames: 600, Span: 10}, "", nil},
		{"60.5", Info{FrameRate: 60.5, EncodeRate: 60.5, Frames: 605, Span: 10}, "", nil},
		{"sparse", Info{FrameRate: 25, EncodeRate: 25, Frames: 10, Span: 100}, "fps=1", nil},
		{"120", Info{FrameRate: 120, EncodeRate: 120, Frames: 1200, Span: 10}, keep("1/60", "1/240"), []string{"-r", "60"}},
		{"119.88", Info{FrameRate: 119.88, EncodeRate: 119.88, Frames: 1199, Span: 10},
			keep("1001/60000", "1001/240000"), []string{"-r", "60000/1001"}},
		{"119.88 taken for 120 (FLV)", Info{FrameRate: 119.875, EncodeRate: 120, Frames: 2398, Span: 20.003, MaxGap: 0.009},
			keep("1001/60000", "1001/240000"), []string{"-r", "60000/1001"}},
		{"120 in FLV", Info{FrameRate: 120, EncodeRate: 120, Frames: 2400, Span: 20.0, MaxGap: 0.009}, keep("1/60", "1/240"), []string{"-r", "60"}},
		// As many frames a second as 119.88, one missing: its gap says 120.
		{"120 missing a frame", Info{FrameRate: 120, EncodeRate: 120, Frames: 1199, Span: 10.001, MaxGap: 0.017},
			keep("1/60", "1/240"), []string{"-r", "60"}},
		{"143.86", Info{FrameRate: 143.856, EncodeRate: 143.856, Frames: 1439, Span: 10}, keep("1001/48000", "1001/288000"), []string{"-r", "48000/1001"}},
		// A quarter of 60's frame time is a whole frame of 240's: half of that.
		{"240", Info{FrameRate: 240, EncodeRate: 240, Frames: 2400, Span: 10}, keep("1/60", "1/480"), []string{"-r", "60"}},
		{"100, no guess from the headers", Info{FrameRate: 100, Frames: 1000, Span: 10}, keep("1/50", "1/200"), []string{"-r", "50"}},
		{"120.5: a third, under 48, held at 60", Info{FrameRate: 120.5, EncodeRate: 120.5, Frames: 1205, Span: 10}, keep("1/60", "1/241"), []string{"-r", "60"}},
		{"90: held at 60", Info{FrameRate: 90, EncodeRate: 90, Frames: 900, Span: 10}, keep("1/60", "1/240"), []string{"-r", "60"}},
		{"60 a second on a 120 grid", Info{FrameRate: 60.1, EncodeRate: 120, Frames: 601, Span: 10}, keep("1/60", "1/240"), []string{"-r", "60"}},
		{"sparse on a 120 grid", Info{FrameRate: 120, EncodeRate: 120, Frames: 100, Span: 10}, "fps=10", nil},
	} {
		got, rate := rateCap(tt.info)
		if got != tt.want {
			t.Errorf("%s: rateCap = %q, want %q", tt.name, got, tt.want)
		}
		if !slices.Equal(rate, tt.rate) {
			t.Errorf("%s: rateCap's output options = %q, want %q", tt.name, rate, tt.rate)
		}
	}
}

// TestFastPathRates: the fast path takes a source of at most 60 fps on
// average, as scanned and on its nominal grid, and nothing faster nor far
// sparser.
func TestFastPathRates(t *testing.T) {
	base := Info{VideoCodec: "h264", Width: 1280, Height: 720, FrameRate: 30, EncodeRate: 30, Frames: 300, Span: 10,
		Duration: 10, MaxGap: 0.04, Source: Source{PixFmt: "yuv420p", Profile: "High", Level: 31, FieldOrder: "progressive",
			SAR: "1:1", BitRate: 1_000_000, VideoBytes: 1_250_000, PeakBytes: 500_000, KeyFirst: true, MaxKeyInterval: 2}}
	for _, tt := range []struct {
		name string
		edit func(*Info)
		why  string // "" when copied
	}{
		{"30 fps", func(*Info) {}, ""},
		{"60 on average on a 120 grid", func(i *Info) { i.FrameRate, i.EncodeRate, i.Frames, i.MaxGap = 60, 120, 600, 0.025 }, "nominal 120"},
		{"headers say 60, the file holds 120", func(i *Info) { i.FrameRate, i.EncodeRate, i.Frames, i.MaxGap = 60, 60, 1200, 0.01 }, "frame rate 60 in the headers, 120 scanned"},
		{"headers say 30, the file holds 60", func(i *Info) { i.Frames, i.MaxGap = 600, 0.02 }, "frame rate 30 in the headers, 60 scanned"},
		{"headers say 60, the file holds 30", func(i *Info) { i.FrameRate, i.EncodeRate = 60, 60 }, "frame rate 60 in the headers, 30 scanned"},
		{"29.97 on a 30 count", func(i *Info) { i.FrameRate, i.EncodeRate = 29.97, 29.97 }, ""},
		{"120 fps", func(i *Info) { i.FrameRate, i.EncodeRate, i.Frames, i.MaxGap = 120, 120, 1200, 0.01 }, "frame rate"},
		{"far sparser than its nominal rate", func(i *Info) { i.Frames, i.MaxGap = 70, 0.2 }, "sparser"},
		// 2560x1080 needs 5.1 at 60 fps, 5.0 at the 30 it holds: headers
		// claiming 60 do not raise the level limit.
		{"level 5.1 claimed at 60 over 30 fps frames", func(i *Info) {
			i.Width, i.Height, i.Source.Level, i.FrameRate, i.EncodeRate = 2560, 1080, 51, 60, 60
		}, "frame rate 60 in the headers, 30 scanned"},
		{"level 5.1 at 30 fps", func(i *Info) { i.Width, i.Height, i.Source.Level = 2560, 1080, 51 }, "level 5.1 is over 5.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info := base
			tt.edit(&info)
			f := chooseFastPath(info, Ladder(info)[0])
			if tt.why == "" && !f.Video || tt.why != "" && (f.Video || !strings.Contains(f.Why, tt.why)) {
				t.Errorf("fast path %+v, want copied %v (%q)", f, tt.why == "", tt.why)
			}
		})
	}
}

// TestThumbnailAt: kino's choice is a tenth of the way into the video's
// pictures; a moment asked for is kept between the first picture and
// 0.1 s before the end. A lead under a second (an AAC track's priming) is
// not skipped: the seek to 0 finds the first picture, and a seek of a few
// milliseconds into some FLV files lands on their second keyframe.
func TestThumbnailAt(t *testing.T) {
	at := func(f float64) *float64 { return &f }
	for _, tt := range []struct {
		lead, span, duration float64
		asked                *float64
		want                 float64
	}{
		{0, 20, 20, nil, 2},
		{0, 20, 20, at(25), 19.9},
		{0, 0.5, 0.5, nil, 0},
		{0.023, 10, 10.023, nil, 1.0023},
		{0.023, 10, 10.023, at(0), 0},
		{10, 3.5, 13.5, nil, 10.35},
		{10, 3.5, 13.5, at(2), 10},
		{10, 3.5, 13.5, at(12), 12},
		{10, 0.5, 10.5, nil, 10.05},
	} {
		info := Info{Duration: tt.duration, Span: tt.span, Source: Source{Lead: tt.lead}}
		if got := ThumbnailAt(info, tt.asked); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("lead %v, span %v, asked %v: ThumbnailAt = %v, want %v", tt.lead, tt.span, tt.asked, got, tt.want)
		}
	}
}
