package asr

import (
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sec(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// TestParseMetadataFestival reads what ffmpeg's silencedetect and asr
// wrote for four sentences Festival said (testdata/festival.meta, frozen).
func TestParseMetadataFestival(t *testing.T) {
	f, err := os.Open("testdata/festival.meta")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	utts, sound, err := parseMetadata(f)
	if err != nil {
		t.Fatal(err)
	}
	wantUtts := []utterance{
		{sec(4.224), strings.Fields("the quick brown fox jumped over the lazy dog")},
		{sec(8.448), strings.Fields("she sells seashells by the seashore")},
		{sec(12.928), strings.Fields("please call stella and ask her to bring these things")},
		{sec(15.616), strings.Fields("the weather is nice today")},
	}
	wantSound := []span{{sec(0.736063), sec(3.77944)}, {sec(5.28188), sec(7.94719)}, {sec(9.52019), sec(12.4164)}, {sec(13.9157), sec(15.2321)}}
	if !reflect.DeepEqual(utts, wantUtts) {
		t.Errorf("utterances = %v, want %v", utts, wantUtts)
	}
	if !reflect.DeepEqual(sound, wantSound) {
		t.Errorf("sound = %v, want %v", sound, wantSound)
	}
}

func TestParseMetadata(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		utts  []utterance
		sound []span
		err   error
	}{
		{name: "empty"},
		{
			name: "sound without a pause runs to the last frame",
			in:   "frame:3 pts:1 pts_time:2.5\nlavfi.asr.text=hello there\nframe:9 pts:1 pts_time:4\nlavfi.other=1\n",
			utts: []utterance{{sec(2.5), []string{"hello", "there"}}}, sound: []span{{0, sec(4)}},
		},
		{
			name: "fillers are dropped, utterances of nothing kept",
			in:   "frame:1 pts:0 pts_time:1\nlavfi.asr.text=\nframe:2 pts:0 pts_time:2\nlavfi.asr.text=<sil> [NOISE] ++UH++ read(2) it\n",
			utts: []utterance{{sec(1), nil}, {sec(2), []string{"read", "it"}}}, sound: []span{{0, sec(2)}},
		},
		{
			name:  "a pause from the start, then sound to the end",
			in:    "frame:1 pts:0 pts_time:0.5\nlavfi.silence_start=-0.001\nframe:2 pts:0 pts_time:1\nlavfi.silence_end=1.2\nframe:3 pts:0 pts_time:3\n",
			sound: []span{{sec(1.2), sec(3)}},
		},
		{
			name: "words are printable UTF-8",
			in:   "frame:1 pts:0 pts_time:1\nlavfi.asr.text=caf\xc3\xa9 \xff\x01bad\x1b[31m\n",
			utts: []utterance{{sec(1), []string{"café", "bad"}}}, sound: []span{{0, sec(1)}},
		},
		{name: "a frame line without its time", in: "frame:1 pts:0\n", err: errMetadata},
		{name: "a pause at no time", in: "lavfi.silence_start=soon\n", err: errMetadata},
		{name: "a pause at an absurd time", in: "lavfi.silence_end=1e300\n", err: errMetadata},
		{name: "a line over 64 KiB", in: "lavfi.asr.text=" + strings.Repeat("a", 70<<10) + "\n", err: errMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			utts, sound, err := parseMetadata(strings.NewReader(tt.in))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !reflect.DeepEqual(utts, tt.utts) || !reflect.DeepEqual(sound, tt.sound) {
				t.Errorf("got %v %v, want %v %v", utts, sound, tt.utts, tt.sound)
			}
		})
	}
}

// TestParseMetadataBounded: a file over maxMetadata is refused, read no
// further than the bound.
func TestParseMetadataBounded(t *testing.T) {
	line := "frame:1 pts:0 pts_time:1\nlavfi.asr.text=" + strings.Repeat("word ", 200) + "\n"
	r := &countingReader{r: strings.NewReader(strings.Repeat(line, maxMetadata/len(line)+100))}
	if _, _, err := parseMetadata(r); !errors.Is(err, errMetadata) {
		t.Fatalf("err = %v, want errMetadata", err)
	}
	if r.n > maxMetadata+1 {
		t.Errorf("read %d bytes, bound %d", r.n, maxMetadata)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
