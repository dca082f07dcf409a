package ffmpeg

import (
	"bytes"
	"context"
	"fmt"
	"image/jpeg"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// The builders' arguments run through Run on real clips.

func TestHLSEndToEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		clip   clip
		rotate bool
		rungs  []string // names Ladder should give
		width  int      // of the top rung
	}{
		{"640x360 with audio", clip{W: 640, H: 360, Seconds: 2, Audio: true}, false, []string{"360p", "240p"}, 640},
		{"640x360 without audio", clip{W: 640, H: 360, Seconds: 2}, false, []string{"360p", "240p"}, 640},
		// ffmpeg autorotates: the one rung is portrait, named by its short side.
		{"rotated 320x180", clip{W: 320, H: 180, Seconds: 2, Audio: true}, true, []string{"180p"}, 180},
		// Shown 320 wide (as HDV's 1440×1080 is 1920): the rung has the
		// picture's shape in square pixels.
		{"240x180 with 4:3 pixels", clip{W: 240, H: 180, Seconds: 2, Audio: true, Codecs: anamorphic}, false, []string{"180p"}, 320},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := makeClip(t, dir, "source.mp4", tt.clip)
			if tt.rotate {
				src = rotated(t, src, dir, "rotated.mp4")
			}
			info, err := probePath(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			rungs := Ladder(info)
			var names []string
			for _, r := range rungs {
				names = append(names, r.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.rungs) || rungs[0].Width != tt.width {
				t.Fatalf("Ladder(%+v) = %+v, want %v, %d wide", info, rungs, tt.rungs, tt.width)
			}

			out := filepath.Join(dir, "hls")
			var progress []float64
			err = Run(context.Background(), HLSArgs(input(t, src), out, info, rungs), RunOptions{
				Duration:   info.Duration,
				OnProgress: func(f float64) { progress = append(progress, f) },
			})
			if err != nil {
				t.Fatalf("Run(HLSArgs): %v", err)
			}
			// ffmpeg's last block carries out_time_us, then progress=end:
			// the value before the final 1 comes from the encoded time.
			if n := len(progress); n < 2 || progress[n-1] != 1 || progress[n-2] < 0.9 {
				t.Errorf("progress reports %v, want out_time near the duration, then 1", progress)
			}

			master := readFile(t, filepath.Join(out, "master.m3u8"))
			variants := regexp.MustCompile(`#EXT-X-STREAM-INF:BANDWIDTH=(\d+),RESOLUTION=(\d+x\d+)[^\n]*\n(\S+)`).
				FindAllStringSubmatch(string(master), -1)
			if len(variants) != len(rungs) {
				t.Fatalf("master.m3u8 has %d variants, want %d:\n%s", len(variants), len(rungs), master)
			}
			for k, r := range rungs {
				v := variants[k]
				if bw, _ := strconv.Atoi(v[1]); bw < r.MaxRate*1000/2 {
					t.Errorf("%s: BANDWIDTH %d, want about %d kbit/s video, the cap (audio-only bandwidth breaks ABR)", r.Name, bw, r.MaxRate)
				}
				if want := fmt.Sprintf("%dx%d", r.Width, r.Height); v[2] != want {
					t.Errorf("%s: RESOLUTION %s, want %s", r.Name, v[2], want)
				}
				if want := r.Name + "/index.m3u8"; v[3] != want {
					t.Errorf("variant URI %s, want %s", v[3], want)
				}
				// kino never probes a playlist: its first segment stands for it.
				got, err := probePath(context.Background(), ffmpegtest.Segment(t, filepath.Join(out, r.Name), "seg_00000.m4s"))
				if err != nil {
					t.Fatalf("probe %s segment: %v", r.Name, err)
				}
				if got.Width != r.Width || got.Height != r.Height || got.HasAudio {
					t.Errorf("%s playlist: %dx%d audio %v, want %dx%d video only (audio is a shared rendition)",
						r.Name, got.Width, got.Height, got.HasAudio, r.Width, r.Height)
				}
				if _, err := os.Stat(filepath.Join(out, r.Name, "seg_00000.m4s")); err != nil {
					t.Error(err)
				}
			}
			// One audio rendition, shared by every rung, only when the source has audio.
			media := regexp.MustCompile(`#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="(\w+)"[^\n]*URI="audio/index.m3u8"`).FindStringSubmatch(string(master))
			if (media != nil) != tt.clip.Audio {
				t.Fatalf("audio rendition in master = %v, source audio %v:\n%s", media != nil, tt.clip.Audio, master)
			}
			if tt.clip.Audio {
				if n := strings.Count(string(master), `AUDIO="`+media[1]+`"`); n != len(rungs) {
					t.Errorf("%d of %d variants reference the audio group", n, len(rungs))
				}
				probe, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0",
					filepath.Join(out, "audio", "index.m3u8")).Output()
				// (ffprobe may list a stream once per HLS program too.)
				if err != nil || !strings.Contains(string(probe), "audio") || strings.Contains(string(probe), "video") {
					t.Errorf("audio playlist streams %q (%v), want audio only", probe, err)
				}
			}
		})
	}
}

// TestHighFrameRateEndToEnd: an upload over 60 fps is encoded at half
// its rate, every second frame, from Matroska and FLV files whose times
// are whole milliseconds (8, 17, 25 ms...), whose video starts at 0 or 23
// ms in (behind AAC's priming), at 120 and at 119.88 fps (which ffmpeg
// takes for 120 in FLV): an fps filter on the file's own times kept source
// frames 1, 2 and 3 apart by turns where they sit near the midpoint
// between two 60 fps ticks. A 60 fps file that ffmpeg takes for 120 (some of
// its frames 6 ms late) keeps every frame; one at 120 then 30 keeps every
// second frame, then each. The video stays where it is against the audio:
// a file cut mid-GOP, whose first frame shown comes half a second after
// its first packet, is filled with that frame up to its time. Each source
// frame carries its number in its brightness, so the rung tells which
// were kept.
func TestHighFrameRateEndToEnd(t *testing.T) {
	t.Parallel()
	numbered := func(rate string) string {
		return "nullsrc=size=320x180:rate=" + rate + ",format=yuv420p,geq=lum='mod(N,64)*4':cb=128:cr=128"
	}
	withAAC := func(rate, vf string, out ...string) []string {
		return append([]string{"-f", "lavfi", "-i", numbered(rate) + ",setpts=N/FRAME_RATE/TB" + vf, "-f", "lavfi", "-i", "sine=d=2",
			"-t", "2", "-r", rate, "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-c:a", "aac"}, append(out, "fast.mkv")...)
	}
	for _, tt := range []struct {
		name    string
		make    []string // ffmpeg's arguments, writing fast.<ext>
		copy    []string // then a copy of it with these output options into copy.<ext>, or nil
		want    float64
		steps   string // between source frames kept, in the order first seen (those in rare left out)
		rare    string // steps allowed at most 4 times: a frame lost or missing
		repeats [2]int // at least, at most: frames of the first source frame, 1 and a tick of 60 fps for each it starts late
	}{
		{"120 in Matroska", withAAC("120", ""), nil, 60, "2", "", [2]int{2, 2}},
		{"120 in Matroska, no audio", []string{"-f", "lavfi", "-i", numbered("120"), "-t", "2", "-c:v", "libx264", "-preset", "ultrafast",
			"-qp", "0", "fast.mkv"}, nil, 60, "2", "", [2]int{1, 1}},
		{"119.88 in Matroska", withAAC("120000/1001", ""), nil, 60000.0 / 1001, "2", "", [2]int{2, 2}},
		{"240 in Matroska", withAAC("240", ""), nil, 60, "4", "", [2]int{2, 2}},
		{"119.88 in FLV", withAAC("120000/1001", ""), []string{"copy.flv"}, 60000.0 / 1001, "2", "", [2]int{2, 2}},
		{"60 with late frames", []string{"-f", "lavfi", "-i", numbered("60") +
			",settb=1/90000,setpts='(N/60+if(eq(mod(N,7),3),0.006,0))/TB'", "-t", "2", "-c:v", "libx264", "-preset", "ultrafast",
			"-qp", "0", "-fps_mode", "passthrough", "-enc_time_base", "1/90000", "-video_track_timescale", "90000", "fast.mp4"}, nil, 60, "1", "", [2]int{1, 1}},
		{"120 then 30", withAAC("120", ",select='lt(n,120)+not(mod(n,4))'", "-fps_mode", "vfr"), nil, 60, "204", "", [2]int{2, 2}},
		{"cut mid-GOP", withAAC("120", "", "-g", "120", "-bf", "0"), []string{"-ss", "0.5", "-copyinkf", "copy.mkv"}, 60, "2", "", [2]int{28, 34}},
		// As many frames a second as 119.88, but on 120 with a frame missing.
		{"120 missing a frame", []string{"-f", "lavfi", "-i", numbered("120") + ",select='not(eq(n,600))'", "-t", "10",
			"-fps_mode", "passthrough", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "fast.mkv"}, nil, 60, "2", "13", [2]int{1, 1}},
		// One frame a second lost, not one whenever a frame runs early.
		{"61 in Matroska", withAAC("61", ""), nil, 60, "1", "02", [2]int{2, 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := slices.Clone(tt.make)
			src := filepath.Join(dir, args[len(args)-1])
			args[len(args)-1] = src
			ffmpegOK(t, args...)
			if tt.copy != nil {
				copied := filepath.Join(dir, tt.copy[len(tt.copy)-1])
				ffmpegOK(t, append(append([]string{"-i", src, "-c", "copy"}, tt.copy[:len(tt.copy)-1]...), copied)...)
				src = copied
			}
			info, err := probePath(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			if info.EncodeRate <= 60 {
				t.Fatalf("ffmpeg takes the file for %g fps, want over 60", info.EncodeRate)
			}
			// The transcoder writes FRAME-RATE from OutputRate.
			if got := OutputRate(info); got != tt.want {
				t.Errorf("OutputRate = %g, want %g", got, tt.want)
			}
			out := filepath.Join(dir, "hls")
			if err := Run(context.Background(), HLSArgs(input(t, src), out, info, nil), RunOptions{Duration: info.Duration}); err != nil {
				t.Fatalf("Run(HLSArgs): %v", err)
			}
			kept := frameNumbers(t, filepath.Join(out, "180p", "index.m3u8"))
			first := 0
			for first < len(kept) && kept[first] == kept[0] {
				first++
			}
			if first < tt.repeats[0] || first > tt.repeats[1] {
				t.Errorf("the rung starts with frame %d %d times, want %d to %d", kept[0], first, tt.repeats[0], tt.repeats[1])
			}
			if tt.copy == nil && kept[0] != 0 {
				t.Errorf("the rung starts with frame %d, want 0", kept[0])
			}
			seen, rare := "", 0
			for i := first; i < len(kept); i++ {
				step := strconv.Itoa((kept[i] - kept[i-1] + 64) % 64)
				if tt.rare != "" && strings.Contains(tt.rare, step) {
					rare++
				} else if !strings.Contains(seen, step) {
					seen += step
				}
			}
			if rare > 4 {
				t.Errorf("steps of %s: %d, want at most 4 (%v)", tt.rare, rare, kept)
			}
			if seen != tt.steps {
				t.Errorf("steps between source frames kept: %s, want %s (%v)", seen, tt.steps, kept)
			}
		})
	}
}

// TestAudioLeadEndToEnd: a video that starts 10 s after its audio, in
// Matroska and in MP4 (where the video stream's own duration leaves the
// lead out), is as long as the file: the rung holds its first picture
// from the start, then every frame to the last; the storyboard's tile k is
// the picture on screen k seconds in; the thumbnail, the animation and the
// preview come from the video itself (seeking into the lead of a Matroska
// file finds no picture at all).
func TestAudioLeadEndToEnd(t *testing.T) {
	t.Parallel()
	for _, ext := range []string{"mkv", "mp4"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// Frame N (10 a second, 35 of them) is 40+4N bright. (ffmpeg
			// would fill the lead writing MP4: the MP4 is a copy, which
			// delays the video by an edit list.)
			src := filepath.Join(dir, "lead.mkv")
			ffmpegOK(t, "-f", "lavfi", "-i", "sine=d=13.5", "-itsoffset", "10", "-f", "lavfi", "-i",
				"nullsrc=size=320x180:rate=10:d=3.5,format=yuv420p,geq=lum='40+4*N':cb=128:cr=128",
				"-map", "1:v", "-map", "0:a", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-c:a", "aac", src)
			if ext != "mkv" {
				copied := filepath.Join(dir, "lead."+ext)
				ffmpegOK(t, "-i", src, "-c", "copy", copied)
				src = copied
			}
			info, err := probePath(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(info.Source.Lead-10) > 0.05 || math.Abs(info.Duration-13.5) > 0.05 || math.Abs(info.Length()-13.5) > 0.05 {
				t.Fatalf("Probe: lead %v, duration %v, length %v; want 10 s and 13.5 s", info.Source.Lead, info.Duration, info.Length())
			}
			out := filepath.Join(dir, "hls")
			if err := Run(context.Background(), HLSArgs(input(t, src), out, info, nil), RunOptions{Duration: info.Length()}); err != nil {
				t.Fatal(err)
			}
			kept := frameNumbers(t, filepath.Join(out, "180p", "index.m3u8")) // 10+N
			held := 0
			for held < len(kept) && kept[held] == 10 {
				held++
			}
			if held < 100 || held > 101 {
				t.Errorf("the rung holds its first picture for %d frames, want the lead's 100 or 101 (%v)", held, kept)
			}
			for i := held; i < len(kept); i++ {
				if kept[i] != kept[i-1]+1 {
					t.Fatalf("frame %d follows %d, want every frame once (%v)", kept[i]-10, kept[i-1]-10, kept)
				}
			}
			if last := kept[len(kept)-1]; last != 44 {
				t.Errorf("the rung ends with frame %d, want the last, 34", last-10)
			}
			if audio := playlistSeconds(t, filepath.Join(out, AudioRendition, "index.m3u8")); audio < 13.4 {
				t.Errorf("the audio holds %.2f s, want 13.5", audio)
			}

			sb := PlanStoryboard(info, 320, 180)
			at := ThumbnailAt(info, nil)
			if math.Abs(at-10.35) > 0.05 {
				t.Errorf("ThumbnailAt = %v, want 10%% into the video's 3.5 s after its 10 s lead", at)
			}
			if early := 2.0; ThumbnailAt(info, &early) != pictureStart(info) {
				t.Errorf("a thumbnail asked for in the lead is taken at %v, want the first picture's %v", ThumbnailAt(info, &early), pictureStart(info))
			}
			stills := StillsArgs(input(t, src), info, at, filepath.Join(dir, "t.jpg"), filepath.Join(dir, "p.mp4"), filepath.Join(dir, "a.webp"), sb, dir)
			if err := Run(context.Background(), stills, RunOptions{Duration: info.Length()}); err != nil {
				t.Fatal(err)
			}
			// The picture at k s: the first until 10 s, then the last frame
			// at or before k.
			if got, want := tileNumbers(t, filepath.Join(dir, StoryboardTileName)), []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 19, 29}; !slices.Equal(got, want) {
				t.Errorf("storyboard tiles show frames %v, want %v", got, want)
			}
			if got := tileNumbers(t, filepath.Join(dir, "t.jpg")); len(got) != 1 || got[0] != 4 {
				t.Errorf("the thumbnail shows frame %v, want 4 (the first at or after 10.35 s)", got)
			}
			if preview := frameNumbers(t, filepath.Join(dir, "p.mp4")); preview[0] != 10 || preview[1] != 11 || preview[len(preview)-1] != 44 {
				t.Errorf("the preview shows frames %v, want 0 to 34 (the video from its first picture)", preview)
			}
			if _, err := os.Stat(filepath.Join(dir, "a.webp")); err != nil {
				t.Errorf("no animation: %v", err)
			}
		})
	}
}

// tileNumbers are the frame numbers of the storyboard's tiles under
// pattern, from their brightness 40+4N (JPEG stores it in full range).
func tileNumbers(t *testing.T, pattern string) []int {
	t.Helper()
	var nums []int
	for _, y := range brightness(t, pattern) {
		nums = append(nums, int(math.Round((y*219/255+16-40)/4)))
	}
	return nums
}

// playlistSeconds is the sum of a media playlist's EXTINF durations.
func playlistSeconds(t *testing.T, playlist string) float64 {
	t.Helper()
	sum := 0.0
	for _, m := range regexp.MustCompile(`#EXTINF:([0-9.]+)`).FindAllStringSubmatch(string(readFile(t, playlist)), -1) {
		d, _ := strconv.ParseFloat(m[1], 64)
		sum += d
	}
	return sum
}

// frameNumbers are the numbers the frames of a playlist carry in their
// brightness (mod(N,64)*4).
func frameNumbers(t *testing.T, playlist string) []int {
	t.Helper()
	var nums []int
	for _, y := range brightness(t, playlist) {
		nums = append(nums, int(math.Round(y/4)))
	}
	if len(nums) < 2 {
		t.Fatalf("%s: %d frames", playlist, len(nums))
	}
	return nums
}

// brightness is the average luma of each frame ffmpeg reads from input.
func brightness(t *testing.T, input string) []float64 {
	t.Helper()
	b, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", input,
		"-vf", "signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null", "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	var ys []float64
	for _, m := range regexp.MustCompile(`YAVG=([0-9.]+)`).FindAllStringSubmatch(string(b), -1) {
		y, _ := strconv.ParseFloat(m[1], 64)
		ys = append(ys, y)
	}
	return ys
}

func TestThumbnailEndToEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		clip         clip
		rotate       bool
		wantW, wantH int
	}{
		{"2 s at 10%", clip{W: 640, H: 360, Seconds: 2, Audio: true}, false, 640, 360},
		{"0.5 s clip, scaled to 720 wide", clip{W: 1280, H: 720, Seconds: 0.5}, false, 720, 406},
		{"rotated", clip{W: 320, H: 180, Seconds: 1}, true, 180, 320},
		{"240x180 with 4:3 pixels", clip{W: 240, H: 180, Seconds: 1, Codecs: anamorphic}, false, 320, 180},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := makeClip(t, dir, "source.mp4", tt.clip)
			if tt.rotate {
				src = rotated(t, src, dir, "rotated.mp4")
			}
			info, err := probePath(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "thumbnail.jpg")
			if err := Run(context.Background(), ThumbnailArgs(input(t, src), out, info), RunOptions{Duration: info.Duration}); err != nil {
				t.Fatal(err)
			}
			data := readFile(t, out)
			if !bytes.HasPrefix(data, []byte{0xFF, 0xD8}) {
				t.Fatalf("thumbnail starts % x, want JPEG magic ff d8", data[:min(len(data), 4)])
			}
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Width != tt.wantW || cfg.Height != tt.wantH {
				t.Errorf("thumbnail %dx%d, want %dx%d", cfg.Width, cfg.Height, tt.wantW, tt.wantH)
			}
		})
	}
}

func TestPreviewEndToEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		clip         clip
		wantSeconds  float64 // within 0.1
		wantW, wantH int
	}{
		{"7 s clip is cut to 6", clip{W: 320, H: 180, Seconds: 7, Audio: true}, 6, 320, 180},
		{"720p is brought down to 480p", clip{W: 1280, H: 720, Seconds: 1}, 1, 854, 480},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := makeClip(t, dir, "source.mp4", tt.clip)
			info, err := probePath(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "preview.mp4")
			if err := Run(context.Background(), PreviewArgs(input(t, src), out, info), RunOptions{Duration: min(info.Duration, 6)}); err != nil {
				t.Fatal(err)
			}
			got, err := probePath(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			if got.Duration > 6.05 || got.Duration < tt.wantSeconds-0.1 {
				t.Errorf("preview lasts %v s, want %v (at most 6)", got.Duration, tt.wantSeconds)
			}
			if got.Width != tt.wantW || got.Height != tt.wantH || min(got.Width, got.Height) > 480 {
				t.Errorf("preview %dx%d, want %dx%d", got.Width, got.Height, tt.wantW, tt.wantH)
			}
			if sar := got.Source.SAR; sar != "1:1" && sar != "" {
				t.Errorf("preview pixels %s, want square", sar) // 854×480 is a hair off 16:9
			}
			if got.HasAudio != tt.clip.Audio || got.VideoCodec != "h264" {
				t.Errorf("preview audio %v codec %s, want audio %v h264", got.HasAudio, got.VideoCodec, tt.clip.Audio)
			}
			data := readFile(t, out)
			moov, mdat := bytes.Index(data, []byte("moov")), bytes.Index(data, []byte("mdat"))
			if moov < 0 || mdat < 0 || moov > mdat {
				t.Errorf("moov at %d, mdat at %d: want moov first (+faststart)", moov, mdat)
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
