// Package asrtest is the conformance suite every asr.Engine runs (Run),
// on speech made in the test by Festival's text2wave (Debian packages
// festival and festvox-kallpc16k) with the real ffmpeg, and the word error
// rate it measures (WER).
package asrtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// Sentences are said by Festival's default voice clearly enough for
// pocketsphinx's US English model to get most words.
var Sentences = []string{
	"the quick brown fox jumped over the lazy dog",
	"please call stella and ask her to bring these things",
	"we will meet at the station at noon",
	"the weather is nice today",
}

// Spoken is a sentence of a corpus and when it is said, from the start of
// its recording to its end (Festival's own short silences included).
type Spoken struct {
	Text       string
	Start, End time.Duration
}

// Corpus is a media file of sentences spoken one after the other.
type Corpus struct {
	Path   string
	Spoken []Spoken
}

// Words are the corpus's words in order, with the sentence each is in.
func (c Corpus) Words() (words []string, sentence []int) {
	for i, s := range c.Spoken {
		for _, w := range Words(s.Text) {
			words = append(words, w)
			sentence = append(sentence, i)
		}
	}
	return words, sentence
}

// Festival requires text2wave and its voice: the test is skipped without
// them on a workstation and fails under CI.
func Festival(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("text2wave"); err != nil {
		msg := "speech tests need Festival: apt-get install festival festvox-kallpc16k"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// Layout is where the sentences of a corpus are said.
type Layout struct {
	Lead  time.Duration // silence before the first sentence and after the last
	Gap   time.Duration // silence between two sentences
	Delay time.Duration // from the start of the video to the start of the audio stream
}

// Speech writes dir/name (an mp4 when name ends so; any container ffmpeg
// writes), a 320x180 video of testsrc2 with AAC audio of sentences said by
// Festival, laid out by l.
func Speech(t testing.TB, dir, name string, sentences []string, l Layout) Corpus {
	t.Helper()
	Festival(t)
	const rate = 16000
	silence := func(d time.Duration) []byte { return make([]byte, 2*int(d.Seconds()*rate)) }
	pcm := silence(l.Lead)
	var c Corpus
	for i, s := range sentences {
		if i > 0 {
			pcm = append(pcm, silence(l.Gap)...)
		}
		samples := say(t, dir, i, s, rate)
		start := l.Delay + time.Duration(len(pcm)/2*int(time.Second)/rate)
		pcm = append(pcm, samples...)
		c.Spoken = append(c.Spoken, Spoken{Text: s, Start: start, End: l.Delay + time.Duration(len(pcm)/2*int(time.Second)/rate)})
	}
	pcm = append(pcm, silence(l.Lead)...)
	raw := filepath.Join(dir, name+".s16le")
	if err := os.WriteFile(raw, pcm, 0o644); err != nil {
		t.Fatal(err)
	}
	c.Path = filepath.Join(dir, name)
	seconds := strconv.FormatFloat(l.Delay.Seconds()+float64(len(pcm)/2)/rate, 'f', -1, 64)
	ffmpegtest.Run(t, "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=5",
		"-itsoffset", strconv.FormatFloat(l.Delay.Seconds(), 'f', -1, 64),
		"-f", "s16le", "-ar", strconv.Itoa(rate), "-ac", "1", "-i", raw,
		"-t", seconds, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", c.Path)
	return c
}

// Silence writes a 320x180 mp4 of seconds of video with a silent audio
// track.
func Silence(t testing.TB, dir string, seconds float64) string {
	t.Helper()
	out := filepath.Join(dir, "silence.mp4")
	ffmpegtest.Run(t, "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=5", "-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo",
		"-t", strconv.FormatFloat(seconds, 'f', -1, 64), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", out)
	return out
}

// said keeps each sentence's samples for the test binary's life: Festival
// says the same sentence the same way, and costs a process each time.
var said sync.Map // sentence -> []byte

// say returns the samples (16-bit mono at rate) of Festival saying s.
func say(t testing.TB, dir string, i int, s string, rate int) []byte {
	t.Helper()
	if pcm, ok := said.Load(s); ok {
		return pcm.([]byte)
	}
	wav := filepath.Join(dir, fmt.Sprintf("sentence%d.wav", i))
	cmd := exec.Command("text2wave", "-F", strconv.Itoa(rate), "-otype", "riff", "-o", wav)
	cmd.Stdin = strings.NewReader(s)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("text2wave %q: %v\n%s", s, err, out)
	}
	pcm := readPCM(t, wav, rate)
	said.Store(s, pcm)
	return pcm
}

// readPCM returns the samples of a RIFF WAVE file of 16-bit mono at rate.
func readPCM(t testing.TB, path string, rate int) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 12 || !bytes.Equal(data[:4], []byte("RIFF")) || !bytes.Equal(data[8:12], []byte("WAVE")) {
		t.Fatalf("%s: not a RIFF WAVE file", path)
	}
	var format []byte
	for p := 12; p+8 <= len(data); {
		id, size := string(data[p:p+4]), int(binary.LittleEndian.Uint32(data[p+4:p+8]))
		body := data[p+8 : min(p+8+size, len(data))]
		switch id {
		case "fmt ":
			format = body
		case "data":
			if len(format) < 16 || binary.LittleEndian.Uint16(format[0:2]) != 1 || binary.LittleEndian.Uint16(format[2:4]) != 1 ||
				binary.LittleEndian.Uint32(format[4:8]) != uint32(rate) || binary.LittleEndian.Uint16(format[14:16]) != 16 {
				t.Fatalf("%s: not 16-bit PCM mono at %d Hz", path, rate)
			}
			return body
		}
		p += 8 + size + size%2
	}
	t.Fatalf("%s: no data chunk", path)
	return nil
}
