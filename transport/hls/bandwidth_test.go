package hls

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMediaRates(t *testing.T) {
	measure := func(playlist string, sizes map[string]int64) (Rates, error) {
		t.Helper()
		pl, err := ParseMedia([]byte(playlist))
		if err != nil {
			t.Fatal(err)
		}
		return MediaRates(pl, func(uri string) (int64, error) { return sizes[uri], nil })
	}
	seg := func(d, uri string) string { return "#EXTINF:" + d + ",\n" + uri + "\n" }
	tests := []struct {
		name     string
		playlist string
		sizes    map[string]int64
		want     Rates
	}{
		// b.ts alone: 8 Mbit over 4 s; all: 12.8 Mbit over 10 s.
		{"the largest segment", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + seg("4.000000", "a.ts") + seg("4.000000", "b.ts") + seg("2.000000", "c.ts") + "#EXT-X-ENDLIST\n",
			map[string]int64{"a.ts": 500_000, "b.ts": 1_000_000, "c.ts": 100_000}, Rates{Peak: 2_000_000, Average: 1_280_000}},
		// A last segment of one frame opening on a keyframe (4,799 bytes
		// over 1/30 s: 1.15 Mbit/s) is no run of its own: with the one
		// before it, 206,799 bytes over 4.033 s.
		{"a short last segment", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + seg("4.000000", "a.m4s") + seg("4.000000", "b.m4s") + seg("0.033333", "c.m4s") + "#EXT-X-ENDLIST\n",
			map[string]int64{"a.m4s": 218_000, "b.m4s": 202_000, "c.m4s": 4_799}, Rates{Peak: 436_000, Average: 423_037}},
		// Runs of several segments count when one alone is too short.
		{"short segments", "#EXTM3U\n" + seg("1.000000", "a.m4s") + seg("1.000000", "b.m4s") + seg("4.000000", "c.m4s") + "#EXT-X-ENDLIST\n",
			map[string]int64{"a.m4s": 300_000, "b.m4s": 200_000, "c.m4s": 400_000}, Rates{Peak: 2_000_000, Average: 1_200_000}},
		{"shorter than half the target", "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + seg("1.000000", "a.m4s") + "#EXT-X-ENDLIST\n",
			map[string]int64{"a.m4s": 50_000}, Rates{Peak: 400_000, Average: 400_000}},
		// An audio track of one packet: no time, no rates, no error.
		{"no duration", "#EXTM3U\n" + seg("0.000000", "a.m4s") + "#EXT-X-ENDLIST\n", map[string]int64{"a.m4s": 24}, Rates{}},
		{"no segments", "#EXTM3U\n#EXT-X-ENDLIST\n", nil, Rates{}},
	}
	for _, tt := range tests {
		got, err := measure(tt.playlist, tt.sizes)
		if err != nil || got != tt.want {
			t.Errorf("%s: %+v %v, want %+v", tt.name, got, err, tt.want)
		}
	}
	broken := errors.New("gone")
	pl, _ := ParseMedia([]byte("#EXTM3U\n" + seg("4.0", "a.ts")))
	if _, err := MediaRates(pl, func(string) (int64, error) { return 0, broken }); !errors.Is(err, broken) {
		t.Errorf("a segment that cannot be measured: %v", err)
	}
}

func TestSetBandwidth(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "ffmpeg_master_audio.m3u8"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMaster(data)
	if err != nil {
		t.Fatal(err)
	}
	rates := map[string]Rates{
		"audio/index.m3u8": {Peak: 140_000, Average: 130_000},
		"480p/index.m3u8":  {Peak: 1_500_000, Average: 700_000},
		"360p/index.m3u8":  {Peak: 900_000, Average: 400_000},
		"240p/index.m3u8":  {Peak: 450_000, Average: 200_000},
	}
	if err := m.SetBandwidth(func(uri string) (Rates, error) { return rates[uri], nil }); err != nil {
		t.Fatal(err)
	}
	out, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`#EXT-X-STREAM-INF:BANDWIDTH=1640000,AVERAGE-BANDWIDTH=830000,RESOLUTION=854x480,CODECS="avc1.64001e,mp4a.40.2",AUDIO="group_audio"`,
		`#EXT-X-STREAM-INF:BANDWIDTH=1040000,AVERAGE-BANDWIDTH=530000,RESOLUTION=640x360,`,
		`#EXT-X-STREAM-INF:BANDWIDTH=590000,AVERAGE-BANDWIDTH=330000,RESOLUTION=428x240,`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("master lacks %s:\n%s", want, out)
		}
	}
	// Measured again: the values are replaced in place, not added twice.
	rates["240p/index.m3u8"] = Rates{Peak: 460_000, Average: 210_000}
	if err := m.SetBandwidth(func(uri string) (Rates, error) { return rates[uri], nil }); err != nil {
		t.Fatal(err)
	}
	if a := m.Variants[2].Attrs; a[0] != (Attr{"BANDWIDTH", "600000"}) || a[1] != (Attr{"AVERAGE-BANDWIDTH", "340000"}) || len(a) != 5 {
		t.Errorf("measured again: %s", a)
	}

	// A variant naming an audio group the master lacks is refused.
	m.Variants[0].Attrs = m.Variants[0].Attrs.Set("AUDIO", Quote("other"))
	if err := m.SetBandwidth(func(uri string) (Rates, error) { return rates[uri], nil }); err == nil {
		t.Error("a variant of an unknown audio group was measured")
	}
}
