package ffmpeg

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// TestSniffAllowedContainers: every container of the spec, written by
// ffmpeg, sniffs as its demuxer, and Probe reads it with that demuxer
// forced.
func TestSniffAllowedContainers(t *testing.T) {
	t.Parallel()
	h264 := []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"}
	tests := []struct {
		name    string
		codecs  []string
		muxer   []string // extra output options (a format when the name says nothing)
		demuxer string
	}{
		{"clip.mp4", h264, nil, DemuxMOV},
		{"clip.mov", h264, nil, DemuxMOV},
		{"clip.m4v", h264, []string{"-f", "mp4"}, DemuxMOV},
		{"clip.3gp", h264, nil, DemuxMOV},
		{"clip.3g2", h264, nil, DemuxMOV},
		{"clip.mkv", h264, nil, DemuxMatroska},
		{"clip.webm", []string{"-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8"}, nil, DemuxMatroska},
		{"clip.avi", []string{"-c:v", "mpeg4"}, nil, DemuxAVI},
		{"clip.flv", []string{"-c:v", "flv1"}, nil, DemuxFLV},
		{"clip.wmv", []string{"-c:v", "wmv2"}, nil, DemuxASF},
		{"clip.asf", []string{"-c:v", "msmpeg4"}, nil, DemuxASF},
		{"clip.mpg", []string{"-c:v", "mpeg2video"}, nil, DemuxMPEGPS},
		{"clip.ts", h264, nil, DemuxMPEGTS},
		{"clip.m2ts", h264, []string{"-f", "mpegts", "-mpegts_m2ts_mode", "1"}, DemuxMPEGTS},
		{"clip.ogv", []string{"-c:v", "libtheora"}, nil, DemuxOgg},
	}
	// One ffmpeg writes them all: each output its own encoder and muxer.
	dir := t.TempDir()
	args := []string{"-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25"}
	for _, tt := range tests {
		args = append(append(append(args, "-map", "0", "-t", "0.4"), tt.codecs...), tt.muxer...)
		args = append(args, filepath.Join(dir, tt.name))
	}
	ffmpegOK(t, args...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := readFile(t, filepath.Join(dir, tt.name))
			if got := Sniff(data[:min(len(data), SniffLen)]); got != tt.demuxer {
				t.Fatalf("Sniff = %q, want %q (starts %q)", got, tt.demuxer, data[:16])
			}
			// The name does not matter: the same bytes named .txt.
			renamed := filepath.Join(t.TempDir(), "upload.txt")
			writeFile(t, renamed, data)
			info, err := probePath(context.Background(), renamed)
			if err != nil {
				t.Fatalf("Probe with -f %s: %v", tt.demuxer, err)
			}
			if info.Width != 64 || info.Height != 64 || info.Frames < 5 {
				t.Errorf("Probe = %+v, want 64x64 and the frames", info)
			}
		})
	}
}

// TestSniffRefuses: what ffmpeg would open as a playlist, a script, an
// image or not at all is refused, whatever the name.
func TestSniffRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	png := filepath.Join(dir, "still.png")
	ffmpegOK(t, "-f", "lavfi", "-i", "testsrc2=size=64x64", "-frames:v", "1", png)
	jpg := filepath.Join(dir, "still.jpg")
	ffmpegOK(t, "-f", "lavfi", "-i", "testsrc2=size=64x64", "-frames:v", "1", jpg)
	gif := filepath.Join(dir, "anim.gif")
	ffmpegOK(t, "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=10", "-t", "0.3", gif)
	wav := filepath.Join(dir, "tone.wav")
	ffmpegOK(t, "-f", "lavfi", "-i", "sine", "-t", "0.2", wav)
	noise := make([]byte, 4096)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"HLS playlist", []byte("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nfile:///etc/secret.ts\n#EXT-X-ENDLIST\n")},
		{"HLS playlist after a BOM", []byte("\xEF\xBB\xBF#EXTM3U\n#EXTINF:2,\n../01J00000000000000000000000/original.mkv\n")},
		{"HLS playlist after blank lines", []byte("\n\n#EXTM3U\n#EXTINF:2,\nseg.ts\n")},
		{"ffconcat script", []byte("ffconcat version 1.0\nfile '/etc/passwd'\n")},
		{"DASH manifest", []byte(`<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011"></MPD>`)},
		{"SDP", []byte("v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nm=video 5004 RTP/AVP 96\n")},
		{"HTML", []byte("<!doctype html><html><body>hi</body></html>")},
		{"text", []byte("hello, this is not a video\n")},
		{"empty", nil},
		{"random bytes", noise},
		{"PNG", readFile(t, png)},
		{"JPEG", readFile(t, jpg)},
		{"GIF", readFile(t, gif)},
		{"WAV audio", readFile(t, wav)},
		{"a lone TS sync byte", append([]byte{0x47}, make([]byte, 400)...)},
		{"an mp4 box of an impossible size", []byte("\x00\x00\x00\x04ftypisom")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Sniff(tt.data[:min(len(tt.data), SniffLen)]); got != "" {
				t.Errorf("Sniff = %q, want refused", got)
			}
			path := filepath.Join(t.TempDir(), "innocent.mp4")
			writeFile(t, path, tt.data)
			_, err := OpenInput(path, "")
			if domain.KindOf(err) != domain.Unsupported || domain.MessageOf(err) != NotVideoMessage {
				t.Errorf("OpenInput = %v, want unsupported %q", err, NotVideoMessage)
			}
		})
	}
}

// TestInputArgs: the demuxer is forced, only the file protocol allowed,
// the path addressed as file: (so "http:x" is a file name), and mov drefs off.
func TestInputArgs(t *testing.T) {
	got := strings.Join(Input{Path: "http://example.com/x", Demuxer: DemuxMatroska}.args(), " ")
	if want := "-f matroska -protocol_whitelist file -i file:http://example.com/x"; got != want {
		t.Errorf("args = %q, want %q", got, want)
	}
	got = strings.Join(Input{Path: "input.mov", Demuxer: DemuxMOV}.args(), " ")
	if want := "-f mov -protocol_whitelist file -enable_drefs 0 -i file:input.mov"; got != want {
		t.Errorf("args = %q, want %q", got, want)
	}
}

// TestSniffAcceptsWhatFFmpegReads: files ffmpeg reads fine that start
// otherwise than ffmpeg's own muxers write them: an mp4 whose first box
// is junk or uuid, MPEG-TS after stray bytes or with 204-byte packets,
// and an MPEG-1/2 video elementary stream.
func TestSniffAcceptsWhatFFmpegReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clip := func(name string, codec ...string) []byte {
		out := filepath.Join(dir, name)
		args := append([]string{"-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25", "-t", "0.4"}, codec...)
		ffmpegOK(t, append(args, out)...)
		return readFile(t, out)
	}
	h264 := []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"}
	mp4 := clip("clip.mp4", h264...)
	ts := clip("clip.ts", h264...)
	// ffmpeg's mp4 starts with a 32-byte ftyp and an 8-byte free box.
	if string(mp4[4:8]) != "ftyp" || binary.BigEndian.Uint32(mp4) != 32 || string(mp4[36:40]) != "free" {
		t.Fatalf("mp4 starts %q", mp4[:40])
	}
	junkFirst := append(append([]byte("\x00\x00\x00\x08junk"), mp4[:32]...), mp4[40:]...)
	uuidFirst := append([]byte("\x00\x00\x00\x28uuid"), make([]byte, 32)...) // no ftyp at all, as old QuickTime
	uuidFirst = append(uuidFirst, mp4[40:]...)
	var ts204 []byte
	for i := 0; i+188 <= len(ts); i += 188 {
		ts204 = append(append(ts204, ts[i:i+188]...), make([]byte, 16)...)
	}
	garbage := append([]byte("\x00\x01stray bytes before the first packet"), ts...)

	tests := []struct {
		name    string
		data    []byte
		demuxer string
	}{
		{"mp4 starting with a junk box", junkFirst, DemuxMOV},
		{"mp4 starting with a uuid box", uuidFirst, DemuxMOV},
		{"MPEG-TS after stray bytes", garbage, DemuxMPEGTS},
		{"MPEG-TS with 204-byte packets", ts204, DemuxMPEGTS},
		{"MPEG-2 video elementary stream", clip("clip.m2v", "-c:v", "mpeg2video", "-f", "mpeg2video"), DemuxMPEGVideo},
		{"MPEG-1 video elementary stream", clip("clip.m1v", "-c:v", "mpeg1video", "-f", "mpeg1video"), DemuxMPEGVideo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Sniff(tt.data[:min(len(tt.data), SniffLen)]); got != tt.demuxer {
				t.Fatalf("Sniff = %q, want %q", got, tt.demuxer)
			}
			path := filepath.Join(t.TempDir(), "upload.bin")
			writeFile(t, path, tt.data)
			info, err := probePath(context.Background(), path)
			if err != nil {
				t.Fatalf("Probe with -f %s: %v", tt.demuxer, err)
			}
			if info.Width != 64 || info.Height != 64 || info.Frames < 5 {
				t.Errorf("Probe = %+v, want 64x64 and the frames", info)
			}
		})
	}
}
