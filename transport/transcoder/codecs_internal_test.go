package transcoder

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kino-video/kino/transport/hls"
)

// mp4Box is an MP4 box of type typ around body.
func mp4Box(typ string, body ...[]byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = append(b, typ...)
	for _, p := range body {
		b = append(b, p...)
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

// TestWithCodecs: a variant without CODECS gets its initialization
// segment's avc1.PPCCLL, and AAC LC with an audio group; one that has
// CODECS keeps them; an initialization segment without an avcC, or one
// whose boxes run past its end, is an error, not a guess, and the
// variant is left without (the master still plays).
func TestWithCodecs(t *testing.T) {
	const master = "#EXTM3U\n#EXT-X-VERSION:7\n" +
		"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"audio_0\",DEFAULT=YES,URI=\"audio/index.m3u8\"\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=640x360,AUDIO=\"a\"\n360p/index.m3u8\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=426x240,CODECS=\"avc1.640015,mp4a.40.2\",AUDIO=\"a\"\n240p/index.m3u8\n"
	const media = "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:4\n#EXT-X-MAP:URI=\"init_0.mp4\"\n#EXTINF:4.000000,\nseg_00000.m4s\n#EXT-X-ENDLIST\n"
	// avcC: version, profile, flags, level, length size, one SPS of 4
	// bytes: its NAL header and the same three (or others).
	initWith := func(typ string, avcC ...byte) []byte {
		entry := mp4Box(typ, make([]byte, 78), mp4Box("avcC", avcC))
		stsd := mp4Box("stsd", []byte{0, 0, 0, 0, 0, 0, 0, 1}, entry)
		moov := mp4Box("moov", mp4Box("trak", mp4Box("mdia", mp4Box("minf", mp4Box("stbl", stsd)))))
		return append(mp4Box("ftyp", []byte("iso5")), moov...)
	}
	good := initWith("avc1", 1, 0x4d, 0x40, 0x1f, 0xff, 0xe1, 0, 4, 0x67, 0x4d, 0x40, 0x1f)
	for _, tt := range []struct {
		name string
		init []byte
		want string // the 360p's attributes, or the error
	}{
		{"avcC", good, `RESOLUTION=640x360,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="a"`},
		{"avc3", initWith("avc3", 1, 0x4d, 0x40, 0x1f, 0xff, 0xe1, 0, 4, 0x67, 0x4d, 0x40, 0x1f), `RESOLUTION=640x360,CODECS="avc3.4d401f,mp4a.40.2",AUDIO="a"`},
		{"no avcC", initWith("hvc1", 1, 0x4d, 0x40, 0x1f, 0xff, 0xe1, 0, 4, 0x67, 0x4d, 0x40, 0x1f), "no H.264 sample entry"},
		{"avcC against its SPS", initWith("avc1", 1, 0, 0, 0, 0xff, 0xe1, 0, 4, 0x67, 0x4d, 0x40, 0x1f), "its sequence parameter set"},
		{"a level H.264 has not", initWith("avc1", 1, 0x4d, 0x40, 0xff, 0xff, 0xe1, 0, 4, 0x67, 0x4d, 0x40, 0xff), "not one a browser knows"},
		{"avcC without an SPS", initWith("avc1", 1, 0x4d, 0x40, 0x1f, 0xff, 0xe0, 0, 0, 0, 0, 0, 0), "no sequence parameter set"},
		{"cut short", good[:len(good)-3], "has size"},
		{"a FIFO", nil, "not a plain file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			for name, data := range map[string][]byte{"master.m3u8": []byte(master), "360p/index.m3u8": []byte(media), "360p/init_0.mp4": tt.init} {
				file := filepath.Join(work, "hls", filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
					t.Fatal(err)
				}
				if data == nil {
					if err := syscall.Mkfifo(file, 0o600); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(file, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			root, err := os.OpenRoot(work)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			out, err := describeVariants(root, []byte(master), 0, nil)
			if err != nil && !strings.Contains(string(out), "RESOLUTION=640x360,AUDIO=\"a\"") {
				t.Fatalf("describeVariants failed (%v) and changed the variant:\n%s", err, out)
			}
			switch {
			case err != nil && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("describeVariants: %v, want %q", err, tt.want)
			case err == nil && !strings.Contains(string(out), tt.want):
				t.Fatalf("describeVariants:\n%s\nwant %s", out, tt.want)
			case err == nil && !strings.Contains(string(out), `RESOLUTION=426x240,CODECS="avc1.640015,mp4a.40.2",AUDIO="a"`):
				t.Fatalf("the 240p's attributes changed:\n%s", out)
			}
		})
	}
}

// TestDescribeVariantsBandwidth: a copied top rung is announced at the
// bandwidth the fast path measured of what it keeps, whether ffmpeg's
// guess (the container's bit rate) is above it (filler data counted) or
// below (the audio's alone); other variants keep ffmpeg's.
func TestDescribeVariantsBandwidth(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, ffmpegs := range []string{"5630124", "140800"} {
		master := "#EXTM3U\n#EXT-X-VERSION:7\n" +
			"#EXT-X-STREAM-INF:BANDWIDTH=" + ffmpegs + ",RESOLUTION=1280x720,CODECS=\"avc1.64001f\"\n720p/index.m3u8\n" +
			"#EXT-X-STREAM-INF:BANDWIDTH=900000,RESOLUTION=854x480,CODECS=\"avc1.64001f\"\n480p/index.m3u8\n"
		out, err := describeVariants(root, []byte(master), 0, map[string]int64{"720p": 2545750})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "BANDWIDTH=2545750,RESOLUTION=1280x720") || !strings.Contains(string(out), "BANDWIDTH=900000,RESOLUTION=854x480") {
			t.Errorf("ffmpeg's %s:\n%s", ffmpegs, out)
		}
	}
}

// TestSetFrameRate: FRAME-RATE with three decimals on every variant,
// replacing one already there; an unknown rate changes nothing.
func TestSetFrameRate(t *testing.T) {
	const master = "#EXTM3U\n#EXT-X-VERSION:7\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=640x360,FRAME-RATE=25.000\n360p/index.m3u8\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=1,RESOLUTION=426x240\n240p/index.m3u8\n"
	for _, tt := range []struct {
		rate float64
		want string
	}{{30000.0 / 1001, "29.970"}, {60, "60.000"}, {0, ""}, {math.NaN(), ""}} {
		m, err := hls.ParseMaster([]byte(master))
		if err != nil {
			t.Fatal(err)
		}
		setFrameRate(m, tt.rate)
		for i, v := range m.Variants {
			got, ok := v.Attrs.Get("FRAME-RATE")
			want := tt.want
			if want == "" && i == 0 {
				want = "25.000" // left as it was
			}
			if got != want || ok != (want != "") {
				t.Errorf("rate %g: variant %d FRAME-RATE %q (%t), want %q", tt.rate, i, got, ok, want)
			}
		}
	}
}
