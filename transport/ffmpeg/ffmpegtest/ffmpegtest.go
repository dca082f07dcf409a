// Package ffmpegtest writes small test inputs with the real ffmpeg,
// including the hostile ones kino must refuse cheaply: a gap of hours
// between two frames, a few seconds claiming an hour, a picture far larger
// than any limit (its headers patched, so writing it costs nothing).
package ffmpegtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Run runs ffmpeg quietly and fails the test if it fails.
func Run(t testing.TB, args ...string) {
	t.Helper()
	args = append([]string{"-y", "-nostdin", "-hide_banner", "-loglevel", "error"}, args...)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %q: %v\n%s", args, err, out)
	}
}

// Clip writes a testsrc2 clip of w×h at 25 fps, H.264 (+ AAC when audio)
// in the container the name's extension picks, and returns its path.
func Clip(t testing.TB, dir, name string, w, h int, seconds float64, audio bool) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := []string{"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=25", w, h)}
	if audio {
		args = append(args, "-f", "lavfi", "-i", "sine=frequency=440")
	}
	args = append(args, "-t", strconv.FormatFloat(seconds, 'f', -1, 64),
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
	if audio {
		args = append(args, "-c:a", "aac")
	}
	Run(t, append(args, out)...)
	return out
}

// LongClip writes a seconds long (a multiple of 10) 320x180 H.264 clip
// without audio, in the container name's extension picks, and returns its
// path: Clip's 10 s (encoded once per test binary) repeated by copy, for
// a fraction of the cost of encoding every second of it (5 s of CPU for
// 300 s). A transcoder encodes it as it would the whole.
func LongClip(t testing.TB, dir, name string, seconds int) string {
	t.Helper()
	if seconds <= 0 || seconds%10 != 0 {
		t.Fatalf("LongClip: %d s is not a multiple of 10", seconds)
	}
	ext := filepath.Ext(name)
	v, _ := tens.LoadOrStore(ext, &tenSeconds{})
	ts := v.(*tenSeconds)
	ts.once.Do(func() { ts.data, ts.err = os.ReadFile(Clip(t, t.TempDir(), "ten"+ext, 320, 180, 10, false)) })
	if ts.err != nil || len(ts.data) == 0 {
		t.Fatalf("LongClip: the 10 s clip: %v", ts.err)
	}
	ten := filepath.Join(t.TempDir(), "ten"+ext)
	write(t, ten, ts.data)
	out := filepath.Join(dir, name)
	Run(t, "-stream_loop", strconv.Itoa(seconds/10-1), "-i", ten, "-c", "copy", out)
	return out
}

// tens holds, per container extension, the 10 s clip LongClip loops:
// encoded once per test binary.
var tens sync.Map // extension → *tenSeconds

type tenSeconds struct {
	once sync.Once
	data []byte
	err  error
}

// GapMKV writes a 320x180 mkv of two frames gap seconds apart (a variable
// frame rate file of a few KB whose one gap ffmpeg fills by repeating the
// first frame, gap × rate times, without reporting progress).
func GapMKV(t testing.TB, dir string, gap int) string {
	t.Helper()
	out := filepath.Join(dir, "gap.mkv")
	Run(t, "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=1", "-frames:v", "2",
		"-vf", fmt.Sprintf("setpts=N*%d/TB", gap), "-fps_mode", "passthrough",
		"-c:v", "libx264", "-preset", "ultrafast", out)
	return out
}

// ClaimMKV writes a 320x180 mkv of seconds of video whose header claims
// claimed seconds (the Segment's Duration element, patched).
func ClaimMKV(t testing.TB, dir string, seconds, claimed float64) string {
	t.Helper()
	out := Clip(t, dir, "claim.mkv", 320, 180, seconds, false)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Duration: ID 0x4489, size 8, a float64 of milliseconds (the default
	// TimecodeScale).
	i := bytes.Index(data, []byte{0x44, 0x89, 0x88})
	if i < 0 {
		t.Fatal("ClaimMKV: no Duration element")
	}
	binary.BigEndian.PutUint64(data[i+3:], math.Float64bits(claimed*1000))
	write(t, out, data)
	return out
}

// HugeMJPEG writes an mkv of frames Motion-JPEG frames that claims to be
// w×h (both at most 65535): a 320x320 clip whose Matroska PixelWidth and
// PixelHeight and JPEG frame headers are patched, so it costs nothing to
// write and a decoder would allocate w×h pictures for it.
func HugeMJPEG(t testing.TB, dir string, w, h, frames int) string {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("huge-%dx%d.mkv", w, h))
	Run(t, "-f", "lavfi", "-i", "testsrc2=size=320x320:rate=25", "-frames:v", strconv.Itoa(frames),
		"-c:v", "mjpeg", "-pix_fmt", "yuvj420p", out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	be16 := func(v int) []byte { return []byte{byte(v >> 8), byte(v)} }
	for _, el := range []struct {
		id byte
		v  int
	}{{0xB0, w}, {0xBA, h}} {
		// PixelWidth (0xB0) / PixelHeight (0xBA), size 2, 320.
		i := bytes.Index(data, []byte{el.id, 0x82, 0x01, 0x40})
		if i < 0 {
			t.Fatalf("HugeMJPEG: no element %#x", el.id)
		}
		copy(data[i+2:], be16(el.v))
	}
	// Every JPEG SOF0 (FF C0, length, precision, height, width).
	n := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte{0xFF, 0xC0})
		if j < 0 {
			break
		}
		i += j
		if binary.BigEndian.Uint16(data[i+5:]) == 320 && binary.BigEndian.Uint16(data[i+7:]) == 320 {
			copy(data[i+5:], be16(h))
			copy(data[i+7:], be16(w))
			n++
		}
		i += 2
	}
	if n != frames {
		t.Fatalf("HugeMJPEG: patched %d frame headers of %d", n, frames)
	}
	write(t, out, data)
	return out
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// CoverFirstMP4 writes an mp4 whose stream 0 is a cover picture
// (attached_pic) of coverW×coverH, followed by a 2 s 320x240 H.264 video
// (stream 1) and AAC audio (stream 2): ffmpeg puts the cover first because
// the moov's udta box, which holds it, is moved before the trak boxes.
func CoverFirstMP4(t testing.TB, dir string, coverW, coverH int) string {
	t.Helper()
	clip := Clip(t, dir, "cover-clip.mp4", 320, 240, 2, true)
	cover := filepath.Join(dir, "cover.jpg")
	Run(t, "-f", "lavfi", "-i", fmt.Sprintf("color=red:size=%dx%d", coverW, coverH), "-frames:v", "1", cover)
	out := filepath.Join(dir, "cover-first.mp4")
	Run(t, "-i", clip, "-i", cover, "-map", "1", "-map", "0", "-c", "copy", "-disposition:v:0", "attached_pic", out)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type box struct {
		typ       string
		off, size int
	}
	children := func(from, to int) []box {
		var boxes []box
		for off := from; off+8 <= to; {
			size := int(binary.BigEndian.Uint32(data[off:]))
			if size < 8 {
				t.Fatalf("CoverFirstMP4: box size %d", size)
			}
			boxes = append(boxes, box{string(data[off+4 : off+8]), off, size})
			off += size
		}
		return boxes
	}
	var moov box
	for _, b := range children(0, len(data)) {
		if b.typ == "moov" {
			moov = b
		}
	}
	if moov.size == 0 {
		t.Fatal("CoverFirstMP4: no moov")
	}
	// mvhd, udta, then the rest in order: moov keeps its size, so no
	// chunk offset moves.
	kids := children(moov.off+8, moov.off+moov.size)
	var head, udta, rest []byte
	for _, b := range kids {
		switch b.typ {
		case "mvhd":
			head = data[b.off : b.off+b.size]
		case "udta":
			udta = data[b.off : b.off+b.size]
		default:
			rest = append(rest, data[b.off:b.off+b.size]...)
		}
	}
	if head == nil || udta == nil {
		t.Fatalf("CoverFirstMP4: moov holds %v", kids)
	}
	body := append(append(append([]byte(nil), head...), udta...), rest...)
	copy(data[moov.off+8:], body)
	write(t, out, data)
	return out
}

// GrowingStream writes 1 s of 320x240 H.264 followed by 1 s of w×h, its
// timestamps continued, as MPEG-TS (the two files concatenated) or, for
// any other ext, remuxed with -c copy into that container: the headers
// announce 320x240, the later frames are w×h.
func GrowingStream(t testing.TB, dir, ext string, w, h int) string {
	t.Helper()
	var parts []byte
	for i, size := range []string{"320x240", fmt.Sprintf("%dx%d", w, h)} {
		p := filepath.Join(dir, fmt.Sprintf("part%d.ts", i))
		Run(t, "-f", "lavfi", "-i", "testsrc2=size="+size+":rate=25", "-t", "1",
			"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
			"-output_ts_offset", strconv.Itoa(i), "-f", "mpegts", p)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, data...)
	}
	ts := filepath.Join(dir, "growing.ts")
	write(t, ts, parts)
	if ext == "ts" {
		return ts
	}
	out := filepath.Join(dir, "growing."+ext)
	Run(t, "-i", ts, "-c", "copy", out)
	return out
}

// SparseMKV writes a w×h mkv of frames grey frames gap seconds apart at a
// nominal 30 frames per second: a slide show that ffmpeg, left to itself,
// encodes as gap×30 frames per slide.
func SparseMKV(t testing.TB, dir string, w, h, frames, gap int) string {
	t.Helper()
	out := filepath.Join(dir, "sparse.mkv")
	Run(t, "-f", "lavfi", "-i", fmt.Sprintf("color=gray:size=%dx%d:rate=30", w, h), "-frames:v", strconv.Itoa(frames),
		"-vf", fmt.Sprintf("setpts=N*%d/TB", gap), "-fps_mode", "passthrough",
		"-c:v", "libx264", "-preset", "ultrafast", out)
	return out
}
