package ffmpeg

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

func TestSplitLadder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		info Info
		x    Extras
		want []string // the low lane's rungs; nil: one process
	}{
		{"1080p25 splits below 480p", Info{Width: 1920, Height: 1080, FrameRate: 25}, Extras{}, []string{"360p", "240p"}},
		{"portrait 1080p25 splits by the short side", Info{Width: 1080, Height: 1920, FrameRate: 25}, Extras{}, []string{"360p", "240p"}},
		{"2160p30 splits", Info{Width: 3840, Height: 2160, FrameRate: 30}, Extras{}, []string{"360p", "240p"}},
		{"720p60 splits", Info{Width: 1280, Height: 720, FrameRate: 60}, Extras{}, []string{"360p", "240p"}},
		{"the guessed encode rate counts", Info{Width: 1280, Height: 720, FrameRate: 30, EncodeRate: 60}, Extras{}, []string{"360p", "240p"}},
		{"720p30 is light enough for one process", Info{Width: 1280, Height: 720, FrameRate: 30}, Extras{}, nil},
		{"1080p at 5 fps is light", Info{Width: 1920, Height: 1080, FrameRate: 5}, Extras{}, nil},
		// Encoded at 60 fps (OutputRate), as heavy as 720p60.
		{"720p at 120 fps splits", Info{Width: 1280, Height: 720, FrameRate: 120}, Extras{}, []string{"360p", "240p"}},
		{"360p at 240 fps is encoded at 60: light", Info{Width: 640, Height: 360, FrameRate: 240}, Extras{}, nil},
		// Encoded at the rate of the frames it holds (OutputRate).
		{"1080p at a nominal 25 holding 2 fps is light", Info{Width: 1920, Height: 1080, FrameRate: 25, EncodeRate: 25, Frames: 20, Span: 10}, Extras{}, nil},
		{"one rung cannot split", Info{Width: 320, Height: 180, FrameRate: 1000}, Extras{}, nil},
		{"the fast path is not split", Info{Width: 1920, Height: 1080, FrameRate: 25}, Extras{Fast: FastPath{Video: true}}, nil},
		{"no rate known", Info{Width: 1920, Height: 1080}, Extras{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rungs := Ladder(tt.info)
			k := SplitLadder(tt.info, rungs, tt.x)
			var low []string
			if k > 0 {
				for _, r := range rungs[k:] {
					low = append(low, r.Name)
				}
			}
			if strings.Join(low, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("SplitLadder = %d (low lane %v), want low lane %v", k, low, tt.want)
			}
		})
	}
}

// A ladder run as two lanes, at once, into one directory, merges into the
// very master one process writes, and its rungs' playlists are alike.
func TestLanesMergeIntoTheSingleMaster(t *testing.T) {
	t.Parallel()
	for _, audio := range []bool{true, false} {
		name := "without audio"
		if audio {
			name = "with audio"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := makeClip(t, dir, "source.mp4", clip{W: 854, H: 480, Seconds: 2, Audio: audio})
			info, err := probePath(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			rungs := Ladder(info) // 480p, 360p, 240p
			if len(rungs) != 3 {
				t.Fatalf("Ladder = %v, want three rungs", rungs)
			}
			ctx := context.Background()
			one := filepath.Join(dir, "one")
			if err := Run(ctx, HLSArgs(input(t, src), one, info, rungs), RunOptions{Duration: info.Duration}); err != nil {
				t.Fatal(err)
			}

			lanes := filepath.Join(dir, "lanes")
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, l := range []struct {
				rungs []Rung
				x     Extras
			}{{rungs[1:], Extras{}}, {rungs[:1], Extras{Lane: SecondLane}}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = Run(ctx, LadderArgs(input(t, src), lanes, info, l.rungs, l.x), RunOptions{Duration: info.Duration})
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			low := readFile(t, filepath.Join(lanes, masterPlaylist))
			high := readFile(t, filepath.Join(lanes, LaneMaster(SecondLane)))
			merged, err := MergeMasters(low, high)
			if err != nil {
				t.Fatal(err)
			}
			if want := readFile(t, filepath.Join(one, masterPlaylist)); string(merged) != string(want) {
				t.Fatalf("merged master:\n%s\nwant (one process):\n%s", merged, want)
			}
			// The same playlists, but for the name of the initialization
			// segment: ffmpeg numbers it by the rendition's place in its
			// process (init_<n>.mp4, init.mp4 when it writes only one).
			initName := regexp.MustCompile(`init(_[0-9]+)?\.mp4`)
			for _, r := range rungs {
				a := readFile(t, filepath.Join(one, r.Name, variantPlaylist))
				b := readFile(t, filepath.Join(lanes, r.Name, variantPlaylist))
				if !bytes.Equal(initName.ReplaceAll(a, []byte("init.mp4")), initName.ReplaceAll(b, []byte("init.mp4"))) {
					t.Errorf("%s playlist differs:\n%s\nwant:\n%s", r.Name, b, a)
				}
				if _, err := os.Stat(filepath.Join(lanes, r.Name, string(initName.Find(b)))); err != nil {
					t.Errorf("%s: %v", r.Name, err)
				}
			}
			_, err = os.Stat(filepath.Join(lanes, LaneAudio(SecondLane), variantPlaylist))
			if audio != (err == nil) {
				t.Errorf("the high lane's spare audio: %v, want it there only with audio", err)
			}
		})
	}
}

func TestMergeMastersRefusesWhatIsNotALaneMaster(t *testing.T) {
	t.Parallel()
	good := "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-STREAM-INF:BANDWIDTH=1\n360p/index.m3u8\n"
	for name, bad := range map[string]string{
		"empty":                      "",
		"not a playlist":             "hello\n",
		"no variant":                 "#EXTM3U\n#EXT-X-VERSION:6\n",
		"variant without a playlist": "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-VERSION:6\n",
		"a URI outside a variant":    "#EXTM3U\nfoo.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1\n360p/index.m3u8\n",
		"a tag after the variants":   good + "#EXT-X-MEDIA:TYPE=AUDIO\n",
	} {
		if _, err := MergeMasters([]byte(bad), []byte(good)); err == nil {
			t.Errorf("%s as the low master: merged", name)
		}
		if _, err := MergeMasters([]byte(good), []byte(bad)); err == nil {
			t.Errorf("%s as the high master: merged", name)
		}
	}
}

// TestLaneSplitSmallTop: when even the top rung is 360p or less, the low
// lane takes every rung below it (lanes set to "two" split every ladder
// of two rungs, whatever its weight).
func TestLaneSplitSmallTop(t *testing.T) {
	if k := LaneSplit(Ladder(Info{Width: 640, Height: 360}), Extras{}); k != 1 {
		t.Errorf("LaneSplit(360p ladder) = %d, want 1 (240p in the low lane)", k)
	}
}
