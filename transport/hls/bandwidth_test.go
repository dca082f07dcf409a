package hls

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMediaRates(t *testing.T) {
	pl, err := ParseMedia([]byte("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.000000,\na.ts\n#EXTINF:4.000000,\nb.ts\n#EXTINF:2.000000,\nc.ts\n#EXT-X-ENDLIST\n"))
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{"a.ts": 500_000, "b.ts": 1_000_000, "c.ts": 100_000}
	r, err := MediaRates(pl, func(uri string) (int64, error) { return sizes[uri], nil })
	if err != nil {
		t.Fatal(err)
	}
	// b.ts: 8 Mbit over 4 s; all: 12.8 Mbit over 10 s.
	if r != (Rates{Peak: 2_000_000, Average: 1_280_000}) {
		t.Errorf("rates %+v, want peak 2000000, average 1280000", r)
	}
	broken := errors.New("gone")
	if _, err := MediaRates(pl, func(string) (int64, error) { return 0, broken }); !errors.Is(err, broken) {
		t.Errorf("a segment that cannot be measured: %v", err)
	}
	if _, err := MediaRates(&Media{}, func(string) (int64, error) { return 1, nil }); err == nil {
		t.Error("a playlist without segments has rates")
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
