package ffmpeg_test

import (
	"bytes"
	"cmp"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

func probeFile(t *testing.T, path string) ffmpeg.Info {
	t.Helper()
	in, err := ffmpeg.OpenInput(path, "")
	if err != nil {
		t.Fatal(err)
	}
	info, err := ffmpeg.Probe(context.Background(), in, ffmpeg.ProbeOptions{Bounds: ffmpeg.DefaultBounds()})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestChooseFastPath probes real clips: only 8-bit yuv420p progressive
// unrotated H.264 of the top rung's size within its cap, keyed often
// enough, is copied; AAC LC stereo audio is copied with it.
func TestChooseFastPath(t *testing.T) {
	dir := t.TempDir()
	h264 := ffmpegtest.H264Options()
	with := func(opts ...string) []string {
		out := append([]string(nil), h264...)
		for i := 0; i+1 < len(opts); i += 2 { // replace an option's value, or add it
			found := false
			for j := 0; j+1 < len(out); j++ {
				if out[j] == opts[i] {
					out[j+1], found = opts[i+1], true
				}
			}
			if !found {
				out = append(out, opts[i], opts[i+1])
			}
		}
		return out
	}
	tests := []struct {
		name       string
		w, h       int
		audio      bool
		opts       []string
		video, aud bool
		why        string
	}{
		{"h264_aac_within_cap.mp4", 640, 360, true, h264, true, true, ""},
		{"h264_no_audio.mp4", 640, 360, false, h264, true, false, ""},
		{"h264_mp3.mkv", 640, 360, true, with("-c:a", "libmp3lame"), true, false, ""},
		// Matroska gives no stream's bit rate: the audio is encoded, so
		// the copied rung's variant has one (ffmpeg's master needs it).
		{"h264_aac.mkv", 640, 360, true, h264, true, false, ""},
		{"h264_no_audio.mkv", 640, 360, false, h264, false, false, "no bit rate"},
		{"h264_aac_mono_32k.mp4", 640, 360, true, with("-ac", "1", "-ar", "32000"), true, false, ""},
		{"ten_bit.mp4", 640, 360, true, with("-pix_fmt", "yuv420p10le"), false, false, "pixel format"},
		// 360×640 displayed: the size of its top rung, but turned.
		{"rotated.mp4", 640, 360, true, h264, false, false, "rotated"},
		{"over_cap.mp4", 640, 360, true, with("-b:v", "3000k", "-maxrate", "3000k", "-bufsize", "3000k", "-qp", "5"), false, false, "over the top rung"},
		{"hevc.mp4", 640, 360, true, with("-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error"), false, false, "not h264"},
		{"not_a_rung_size.mp4", 640, 400, true, h264, false, false, "not the top rung"},
		{"sparse_keys.mp4", 640, 360, true, with("-g", "300"), false, false, "keyframes"},
		{"interlaced.mp4", 640, 360, true, with("-flags", "+ildct+ilme", "-x264opts", "interlaced=1"), false, false, "field order"},
		// Apple's players skip a variant whose level is over 4.2.
		{"level_5_1.mp4", 640, 360, true, with("-level", "5.1"), false, false, "level 5.1 is over 4.2"},
		{"level_4_2.mp4", 640, 360, true, with("-level", "4.2"), true, true, ""},
		{"level_0.mp4", 640, 360, true, h264, false, false, "level_idc 0 is no H.264 level"},
		{"level_39.mp4", 640, 360, true, h264, false, false, "level_idc 39 is no H.264 level"},
		// Its size needs 5.0, as kino's own encode of it would say.
		{"wide_2560x1080_level_5.mp4", 2560, 1080, false, h264, true, false, ""},
		// Its first second cut by a copy: the copy starts at the keyframe
		// before the cut, and an edit list hides the frames up to it.
		{"trimmed.mp4", 640, 360, true, h264, false, false, "an edit list hides 25 frames"},
		// Encoded, its first frame fills the first second; copied, a gap.
		{"late_video.mp4", 640, 360, true, h264, false, false, "the video starts 1.00s into the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seconds := 3.0
			if tt.name == "sparse_keys.mp4" {
				seconds = 12
			}
			src := ffmpegtest.Encode(t, dir, tt.name, tt.w, tt.h, seconds, tt.audio, tt.opts...)
			switch tt.name {
			case "rotated.mp4": // ffmpeg 5.1 writes the tag on a remux only
				turned := filepath.Join(dir, "turned.mp4")
				ffmpegtest.Run(t, "-i", src, "-c", "copy", "-metadata:s:v:0", "rotate=90", turned)
				src = turned
			case "trimmed.mp4":
				cut := filepath.Join(dir, "cut.mp4")
				ffmpegtest.Run(t, "-ss", "1", "-i", src, "-c", "copy", cut)
				src = cut
			case "level_0.mp4", "level_39.mp4":
				relabelled := filepath.Join(dir, "relabelled_"+tt.name)
				ffmpegtest.Run(t, "-i", src, "-c", "copy", "-bsf:v", "h264_metadata=level="+strings.TrimSuffix(strings.TrimPrefix(tt.name, "level_"), ".mp4"), relabelled)
				src = relabelled
			case "late_video.mp4":
				late := filepath.Join(dir, "late.mp4")
				ffmpegtest.Run(t, "-itsoffset", "1", "-i", src, "-i", src, "-map", "0:v", "-map", "1:a", "-c", "copy", late)
				src = late
			}
			info := probeFile(t, src)
			got := ffmpeg.ChooseFastPath(info, ffmpeg.Ladder(info)[0])
			if got.Video != tt.video || got.Audio != tt.aud || !strings.Contains(got.Why, tt.why) {
				t.Errorf("fast path %+v, want video %t audio %t why %q (source %+v)", got, tt.video, tt.aud, tt.why, info.Source)
			}
		})
	}
}

// TestLadderExtrasEndToEnd runs the ladder's pass on the fast path and
// the storyboard's own pass on a real clip, then the download remux: the
// top rung is the source's own stream (its Constrained Baseline profile,
// not kino's High), the other rung's segments cut where the copied rung's
// do, the sprite has the planned size, and the download MP4 is the 360p
// rung with its moov first. The video's frames come at a rate that
// wavers (a third of a frame either way, on a 90 kHz clock), from 0.3 s
// after the audio: the encoded rung has every frame at the copy's time,
// its segments the copy's.
func TestLadderExtrasEndToEnd(t *testing.T) {
	dir := t.TempDir()
	encoded := ffmpegtest.Encode(t, dir, "encoded.mp4", 640, 360, 7, true, append(ffmpegtest.H264Options(),
		"-vf", "settb=1/90000,setpts='(N+0.3*sin(N*1.7))/25/TB'", "-fps_mode", "passthrough", "-enc_time_base", "1/90000", "-video_track_timescale", "90000")...)
	src := filepath.Join(dir, "src.mp4")
	ffmpegtest.Run(t, "-itsoffset", "0.3", "-i", encoded, "-i", encoded, "-map", "0:v", "-map", "1:a", "-c", "copy", src)
	info := probeFile(t, src)
	rungs := ffmpeg.Ladder(info)
	sb := ffmpeg.PlanStoryboard(info, rungs[len(rungs)-1].Width, rungs[len(rungs)-1].Height)
	x := ffmpeg.Extras{Fast: ffmpeg.ChooseFastPath(info, rungs[0])}
	sprite := filepath.Join(dir, "sprite.jpg")
	if !x.Fast.Video || !x.Fast.Audio || len(rungs) != 2 || info.Source.Lead < 0.25 {
		t.Fatalf("fast path %+v over %d rungs, the video %gs in; want video and audio over 2, 0.3 s in", x.Fast, len(rungs), info.Source.Lead)
	}
	out := filepath.Join(dir, "hls")
	in := ffmpeg.Input{Path: src, Demuxer: ffmpeg.DemuxMOV}
	if err := ffmpeg.Run(context.Background(), ffmpeg.LadderArgs(in, out, info, x.Fast.Rungs(rungs), x), ffmpeg.RunOptions{Duration: info.Length()}); err != nil {
		t.Fatal(err)
	}
	// The source is lean for its size (400 kbit/s at 360p, half the rung's
	// cap) and detailed: 240p at its own cap and CRF would cost what the
	// copy does, and a player stepping down would save nothing.
	if copied, encoded := segmentBytes(t, filepath.Join(out, "360p")), segmentBytes(t, filepath.Join(out, "240p")); encoded*4 > copied*3 {
		t.Errorf("240p's segments %d bytes, 360p's (copied) %d: the lower rung saves less than a quarter", encoded, copied)
	}
	if err := ffmpeg.Run(context.Background(), ffmpeg.StoryboardArgs(in, dir, info, sb), ffmpeg.RunOptions{Duration: info.Length()}); err != nil {
		t.Fatal(err)
	}
	if err := sb.Assemble(dir, sprite); err != nil {
		t.Fatal(err)
	}
	if got := streamField(t, ffmpegtest.Segment(t, filepath.Join(out, "360p"), "seg_00000.m4s"), "v:0", "profile"); got != "Constrained Baseline" {
		t.Errorf("360p profile %q: not the source's stream", got)
	}
	if got := streamField(t, ffmpegtest.Segment(t, filepath.Join(out, "240p"), "seg_00000.m4s"), "v:0", "profile"); got != "High" {
		t.Errorf("240p profile %q: not kino's encode", got)
	}
	// The last segment ends with its last frame, whose duration each
	// stream has of its own (the source's packet, the encoder's rate).
	a, b := strings.Fields(extinfs(t, filepath.Join(out, "360p", "index.m3u8"))), strings.Fields(extinfs(t, filepath.Join(out, "240p", "index.m3u8")))
	if len(a) != len(b) || len(a) < 2 || !slices.Equal(a[:len(a)-1], b[:len(b)-1]) || math.Abs(extinfSeconds(a[len(a)-1])-extinfSeconds(b[len(b)-1])) > 0.05 {
		t.Errorf("segments differ between the copied and the encoded rung:\n%s\n%s", a, b)
	}
	if a, b := framesAt(t, ffmpegtest.Segment(t, filepath.Join(out, "360p"), "seg_00000.m4s")), framesAt(t, ffmpegtest.Segment(t, filepath.Join(out, "240p"), "seg_00000.m4s")); a != b {
		t.Errorf("the first segment's frames are at other times in the copied and the encoded rung:\n%s\n%s", a, b)
	}
	if w, h := streamField(t, sprite, "v:0", "width"), streamField(t, sprite, "v:0", "height"); w != strconv.Itoa(sb.Width()) || h != strconv.Itoa(sb.Height()) {
		t.Errorf("sprite %sx%s, planned %dx%d", w, h, sb.Width(), sb.Height())
	}

	dl := filepath.Join(dir, "download.mp4")
	rung, ok := ffmpeg.DownloadRung(rungs)
	if !ok || rung.Name != "360p" {
		t.Fatalf("download rung %+v", rung)
	}
	if err := ffmpeg.Run(context.Background(), ffmpeg.DownloadArgs(out, rung, true, dl), ffmpeg.RunOptions{Duration: info.Length()}); err != nil {
		t.Fatal(err)
	}
	if got := streamField(t, dl, "v:0", "profile"); got != "Constrained Baseline" {
		t.Errorf("download profile %q: not a copy", got)
	}
	if got := streamField(t, dl, "a:0", "codec_name"); got != "aac" {
		t.Errorf("download audio %q", got)
	}
}

// segmentBytes is the size of a rung's media segments, together.
func segmentBytes(t *testing.T, rung string) int64 {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(rung, "seg_*.m4s"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments of %s: %v %v", rung, segs, err)
	}
	var n int64
	for _, s := range segs {
		st, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// TestFastPathRungs: the encoded rungs' caps follow the copied stream's
// share of the top rung's cap (each below the copy's rate), never below
// 32 kbit/s, their VBV buffers never below a quarter of their own; the
// copied rung and the ladder given are left as they were.
func TestFastPathRungs(t *testing.T) {
	ladder := ffmpeg.Ladder(ffmpeg.Info{Width: 1280, Height: 720}) // 720p 2800, 480p 1400, 360p 800, 240p 400
	caps := func(rs []ffmpeg.Rung) (out []int) {
		for _, r := range rs {
			out = append(out, r.MaxRate, r.BufSize)
		}
		return out
	}
	before := caps(ladder)
	for _, tt := range []struct {
		name string
		fast ffmpeg.FastPath
		want []int
	}{
		{"no fast path", ffmpeg.FastPath{Kbps: 700}, []int{2800, 2800, 1400, 1400, 800, 800, 400, 400}},
		{"copied at the cap", ffmpeg.FastPath{Video: true, Kbps: 2800}, []int{2800, 2800, 1400, 1400, 800, 800, 400, 400}},
		{"copied at half the cap", ffmpeg.FastPath{Video: true, Kbps: 1400}, []int{2800, 2800, 700, 700, 400, 400, 200, 200}},
		{"copied at a tenth", ffmpeg.FastPath{Video: true, Kbps: 280}, []int{2800, 2800, 140, 350, 80, 200, 40, 100}},
		{"copied at a hundredth", ffmpeg.FastPath{Video: true, Kbps: 28}, []int{2800, 2800, 32, 350, 32, 200, 32, 100}},
	} {
		if got := caps(tt.fast.Rungs(ladder)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: caps %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := caps(ladder); !slices.Equal(got, before) {
		t.Errorf("the ladder given changed: %v, was %v", got, before)
	}
}

// TestStoryboardPasses: the sprite made from the source, by its own pass
// or in the stills' pass, has the planned size, its tiles the same in
// both, past the preview's 6 s too; a one-frame video (whose animated
// preview fails the stills' pass) gets a one-tile sprite from its own.
func TestStoryboardPasses(t *testing.T) {
	dir := t.TempDir()
	oneFrame := filepath.Join(dir, "oneframe.mp4")
	ffmpegtest.Run(t, "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=1", "-frames:v", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p", oneFrame)
	for _, tt := range []struct {
		src    string
		tiles  int
		w, h   string
		stills bool
	}{
		{ffmpegtest.Clip(t, dir, "src.mkv", 320, 240, 8.5, false), 9, "1440", "120", true}, // 9 tiles of 160x120 in a row
		{oneFrame, 1, "160", "120", false},
	} {
		name := filepath.Base(tt.src)
		info := probeFile(t, tt.src)
		sb := ffmpeg.PlanStoryboard(info, 320, 240)
		in, err := ffmpeg.OpenInput(tt.src, "")
		if err != nil {
			t.Fatal(err)
		}
		work, withStills := t.TempDir(), t.TempDir()
		if err := ffmpeg.Run(context.Background(), ffmpeg.StoryboardArgs(in, work, info, sb), ffmpeg.RunOptions{Duration: info.Length()}); err != nil {
			t.Fatal(err)
		}
		stills := ffmpeg.StillsArgs(in, info, 3, filepath.Join(withStills, "t.jpg"), filepath.Join(withStills, "p.mp4"), filepath.Join(withStills, "a.webp"), sb, withStills)
		switch err := ffmpeg.Run(context.Background(), stills, ffmpeg.RunOptions{Duration: info.Length()}); {
		case !tt.stills && err == nil:
			t.Fatalf("%s: the stills' pass succeeded, want its animation's failure", name)
		case !tt.stills:
			withStills = work // the transcoder makes the tiles by their own pass then
		case err != nil:
			t.Fatal(err)
		}
		if tiles, _ := filepath.Glob(filepath.Join(work, "storyboard_tile_*")); len(tiles) != tt.tiles || sb.Count != tt.tiles {
			t.Fatalf("%s: tiles %v of %d planned, want %d", name, tiles, sb.Count, tt.tiles)
		}
		for k := range sb.Count {
			a, errA := os.ReadFile(filepath.Join(work, ffmpeg.TileFile(k)))
			b, errB := os.ReadFile(filepath.Join(withStills, ffmpeg.TileFile(k)))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: tile %d differs (%d bytes alone, %d beside the stills)", name, k, len(a), len(b))
			}
		}
		out := filepath.Join(work, "sb.jpg")
		if err := sb.Assemble(work, out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w, h := streamField(t, out, "v:0", "width"), streamField(t, out, "v:0", "height"); w != tt.w || h != tt.h {
			t.Errorf("%s: sprite %sx%s, want %sx%s (%+v)", name, w, h, tt.w, tt.h, sb)
		}
		if left, _ := filepath.Glob(filepath.Join(work, "storyboard_tile_*")); len(left) > 0 {
			t.Errorf("tiles left behind: %v", left)
		}
	}
}

func streamField(t *testing.T, file, stream, field string) string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "stream="+field, "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", file, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n") // mpegts lists its program's streams too
	return strings.TrimSpace(first)
}

// framesAt lists the presentation times of file's video frames, in order.
func framesAt(t *testing.T, file string) string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", file).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", file, err)
	}
	times := strings.Fields(string(out))
	slices.SortFunc(times, func(a, b string) int {
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		return cmp.Compare(x, y)
	})
	return strings.Join(times, " ")
}

// extinfSeconds is the duration of an "#EXTINF:d," line.
func extinfSeconds(line string) float64 {
	d, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(line, "#EXTINF:"), ","), 64)
	return d
}

func extinfs(t *testing.T, playlist string) string {
	t.Helper()
	data, err := os.ReadFile(playlist)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		if strings.HasPrefix(l, "#EXTINF") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, " ")
}

// TestCheckKeyframes: a stream whose headers announce 320x240 and whose
// second keyframe starts 640x480 pictures is refused (copied, it would
// serve 640x480 frames as its "240p"); so are streams whose flagged
// keyframes are not all IDR frames (x264's intra refresh, an open GOP):
// segments cut there do not decode alone. Those two pass every other
// rule of the fast path. A steady closed-GOP stream passes.
func TestCheckKeyframes(t *testing.T) {
	dir := t.TempDir()
	h264 := ffmpegtest.H264Options()
	for _, tt := range []struct {
		path   string
		chosen bool // ChooseFastPath takes it
		ok     bool
	}{
		{ffmpegtest.GrowingStream(t, dir, "ts", 640, 480), false, false},
		{ffmpegtest.Encode(t, dir, "steady.mp4", 640, 360, 6, false, h264...), true, true},
		{ffmpegtest.Encode(t, dir, "intra_refresh.mp4", 640, 360, 6, false, append(h264, "-x264-params", "keyint=50:intra-refresh=1")...), true, false},
		{ffmpegtest.Encode(t, dir, "open_gop.mp4", 640, 360, 6, false, append(h264, "-x264-params", "keyint=50:open-gop=1:bframes=3:scenecut=0")...), true, false},
	} {
		in, err := ffmpeg.OpenInput(tt.path, "")
		if err != nil {
			t.Fatal(err)
		}
		info := probeFile(t, tt.path)
		if fast := ffmpeg.ChooseFastPath(info, ffmpeg.Ladder(info)[0]); fast.Video != tt.chosen {
			t.Errorf("%s: chosen %+v, want %t", filepath.Base(tt.path), fast, tt.chosen)
		}
		err = ffmpeg.CheckKeyframes(context.Background(), in, info, ffmpeg.Jail{})
		if (err == nil) != tt.ok {
			t.Errorf("%s (%dx%d, %d flagged keyframes): %v, want ok %t", filepath.Base(tt.path), info.Width, info.Height, info.Source.Keys, err, tt.ok)
		}
		t.Logf("%s: %v", filepath.Base(tt.path), err)
	}
}

// TestDecideFastPathOverTheCap: a 240p source at a constant rate over
// the rung's 400 kbit/s cap is copied when what the copy keeps without
// its filler data is within the cap, and judged by the estimate as any
// other; a source at that rate without filler data, or whose busy
// seconds still go over the cap's budget once the filler is dropped,
// is encoded.
func TestDecideFastPathOverTheCap(t *testing.T) {
	dir := t.TempDir()
	constant := func(name string, kbps int, filler bool, graph string) string {
		path := filepath.Join(dir, name)
		args := []string{"-f", "lavfi", "-i", "testsrc=size=426x240:rate=25", "-f", "lavfi", "-i", "testsrc2=size=426x240:rate=25",
			"-t", "17", "-filter_complex", graph, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "50", "-preset", "veryfast"}
		rate := strconv.Itoa(kbps) + "k"
		args = append(args, "-b:v", rate, "-maxrate", rate, "-bufsize", rate)
		if filler {
			args = append(args, "-minrate", rate, "-x264-params", "nal-hrd=cbr:filler=1")
		}
		ffmpegtest.Run(t, append(args, path)...)
		return path
	}
	// A flat gray picture, motion over it from 6.5 s to 9.5 s.
	const moving = "[0:v]drawbox=color=gray:t=fill[still];[still][1:v]overlay=enable='between(t,6.5,9.5)'"
	for _, tt := range []struct {
		name   string
		path   string
		copied bool
		why    string
	}{
		{"padded to 500 kbit/s, 3 s of motion", constant("padded.mp4", 500, true, moving), true, ""},
		{"padded to 600 kbit/s, 3 s of motion", constant("padded600.mp4", 600, true, moving), false, "over the top rung's budget without its filler data"},
		{"padded to 600 kbit/s, motion from 8 s", constant("late.mp4", 600, true, "[0:v]drawbox=color=gray:t=fill[still];[still][1:v]overlay=enable='gte(t,8)'"), false, "without its filler data"},
		{"a screen padded to 600 kbit/s", constant("screen.mp4", 600, true, "[0:v]null"), false, "quality target"},
		{"motion at 600 kbit/s, no filler", constant("motion.mp4", 600, false, "[1:v]null"), false, "kbit/s is over the top rung's 400"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ffmpeg.OpenInput(tt.path, "")
			if err != nil {
				t.Fatal(err)
			}
			info := probeFile(t, tt.path)
			top := ffmpeg.Ladder(info)[0]
			if chosen := ffmpeg.ChooseFastPath(info, top); chosen.Video || !strings.Contains(chosen.Why, "over the top rung's") {
				t.Fatalf("ChooseFastPath: %+v, want over the cap", chosen)
			}
			got, err := ffmpeg.DecideFastPath(context.Background(), in, info, top, ffmpeg.Jail{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", got)
			if got.Video != tt.copied || !strings.Contains(got.Why, tt.why) {
				t.Fatalf("%+v: want copied %t, why %q", got, tt.copied, tt.why)
			}
			if !got.Video {
				return
			}
			if got.Kbps > float64(top.MaxRate) || got.EncodedKbps <= 0 {
				t.Errorf("copied at %.0f kbit/s (estimate %.0f) under a cap of %d", got.Kbps, got.EncodedKbps, top.MaxRate)
			}
			// Players are told the copy's own peak (its motion), not the
			// upload's (the same seconds with their filler).
			if bw, uploaded := got.Bandwidth(info), float64(info.Source.PeakBytes)*8/4; float64(bw) > uploaded*0.9 {
				t.Errorf("BANDWIDTH %d, the upload's peak %.0f", bw, uploaded)
			}
		})
	}
}

// TestDecideFastPath: a source the fast path would take is copied only
// while it spends at most 1.5 times what the top rung's quality target
// spends on the same pictures, measured on samples of it: a still screen
// uploaded at 380 kbit/s (240p, whose target spends a sixth of that) is
// encoded; the same screen encoded near the target is copied, and the
// estimate agrees with the copy's own bitrate, also when the stretch
// sampled is far easier than the rest; a 10 s cut of the over-spent
// screen is sampled and encoded too; a clip too short to be sampled is
// copied as before.
func TestDecideFastPath(t *testing.T) {
	dir := t.TempDir()
	screen := func(name string, seconds string, opts ...string) ffmpeg.Input {
		path := filepath.Join(dir, name)
		ffmpegtest.Run(t, append(append([]string{"-f", "lavfi", "-i", "testsrc=size=426x240:rate=25", "-t", seconds,
			"-f", "lavfi", "-i", "testsrc2=size=426x240:rate=25", "-t", seconds,
			"-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "50"}, opts...), path)...)
		in, err := ffmpeg.OpenInput(path, "")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	overspent := screen("overspent.mp4", "17", "-map", "0:v", "-preset", "ultrafast", "-b:v", "380k", "-minrate", "380k", "-maxrate", "380k", "-bufsize", "380k", "-x264-params", "nal-hrd=cbr:filler=1")
	trimmed := func(name string, from ffmpeg.Input, inputOpts []string, opts ...string) ffmpeg.Input { // part of from, remuxed
		path := filepath.Join(dir, name)
		ffmpegtest.Run(t, append(append(append(inputOpts, "-i", from.Path), opts...), path)...)
		in, err := ffmpeg.OpenInput(path, "")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	// Motion but for 7 s to 14 s, then its first 1.9 s cut off by a
	// copy into MPEG-TS, with audio (a TS gives no video bit rate): it
	// starts at the keyframe before the cut, its timestamps at 1.4 s (the
	// muxer's offset), the stretch sampled still.
	stillWhereSampled := trimmed("still_sampled.mpg", screen("still.mp4", "20", "-filter_complex", "[0:v][1:v]overlay=enable='not(between(t,7,14))'",
		"-preset", "veryfast", "-crf", "20"), []string{"-ss", "1.9"},
		"-f", "lavfi", "-t", "18", "-i", "sine", "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", "-f", "mpegts")
	tests := []struct {
		name    string
		in      ffmpeg.Input
		copied  bool
		sampled bool
	}{
		{"a still screen at 380 kbit/s", overspent, false, true},
		{"the same screen near its quality target", screen("lean.mp4", "17", "-map", "0:v", "-preset", "veryfast", "-crf", "20"), true, true},
		// The source spends little where sampled too, as an encoder with
		// a quality target does: judged on the same seconds, it is lean.
		{"motion near its quality target, still where sampled, trimmed", stillWhereSampled, true, true},
		{"10 s of the still screen at 380 kbit/s", trimmed("ten.mp4", overspent, []string{"-t", "10"}, "-c", "copy"), false, true},
		{"a still screen at 380 kbit/s too short to sample", trimmed("short.mp4", overspent, []string{"-t", "7"}, "-c", "copy"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := probeFile(t, tt.in.Path)
			top := ffmpeg.Ladder(info)[0]
			if chosen := ffmpeg.ChooseFastPath(info, top); !chosen.Video {
				t.Fatalf("ChooseFastPath refuses the clip: %s", chosen.Why)
			}
			got, err := ffmpeg.DecideFastPath(context.Background(), tt.in, info, top, ffmpeg.Jail{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", got)
			if got.Video != tt.copied {
				t.Fatalf("copied %t (%+v), want %t", got.Video, got, tt.copied)
			}
			if !tt.copied && !strings.Contains(got.Why, "quality target") {
				t.Errorf("why %q", got.Why)
			}
			if tt.copied && (got.EncodedKbps > 0) != tt.sampled {
				t.Errorf("estimate %.0f kbit/s, want one: %t", got.EncodedKbps, tt.sampled)
			}
			if tt.copied && tt.sampled && (got.EncodedKbps < got.Kbps/1.5 || got.EncodedKbps > got.Kbps*1.5) {
				// The estimate of the whole source, from its samples.
				t.Errorf("estimate %.0f kbit/s for a copy encoded near the target at %.0f", got.EncodedKbps, got.Kbps)
			}
		})
	}
	// A flat still picture at a constant 300 kbit/s, its still seconds
	// padded with filler data, the stretch sampled (6-10 s) something
	// else: judged by what the copy keeps in the seconds sampled. Motion
	// there spends its bits on pictures (copied, at well under the
	// source's rate); a screen there spends them at a far lower quantizer
	// than the target's (encoded), though the whole copy keeps little.
	for _, tt := range []struct {
		name, sampled string
		copied        bool
	}{
		{"padded with filler, motion where sampled", "[0:v]drawbox=color=gray:t=fill[still];[still][1:v]overlay", true},
		{"padded with filler, a screen where sampled", "[0:v]split[a][b];[a]drawbox=color=gray:t=fill[still];[still][b]overlay", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := screen(strings.ReplaceAll(tt.name, " ", "_")+".mp4", "17", "-filter_complex", tt.sampled+"=enable='between(t,5.5,10.5)'", "-preset", "veryfast",
				"-b:v", "300k", "-minrate", "300k", "-maxrate", "300k", "-bufsize", "300k", "-x264-params", "nal-hrd=cbr:filler=1")
			info := probeFile(t, in.Path)
			top := ffmpeg.Ladder(info)[0]
			got, err := ffmpeg.DecideFastPath(context.Background(), in, info, top, ffmpeg.Jail{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", got)
			container := float64(info.Source.VideoBytes) * 8 / 1000 / info.Span
			if got.Video != tt.copied || (got.Video && got.Kbps > container/2) {
				t.Fatalf("%+v: want copied %t, at less than half the source's %.0f kbit/s", got, tt.copied, container)
			}
		})
	}
}
