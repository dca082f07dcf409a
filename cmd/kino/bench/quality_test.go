package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PeerTube's targets for a 1920x1080 25 fps upload of 20 Mbit/s, as its
// getTargetBitrate computes them.
func TestPeerTubeBitrate(t *testing.T) {
	for res, want := range map[int]int64{1080: 5184064, 720: 2534431, 480: 1228815, 360: 864010, 240: 435205} {
		if got := PeerTubeBitrate(res, 1920.0/1080, 25, 20_000_000); got != want {
			t.Errorf("%dp: %d, want %d", res, got, want)
		}
	}
	// Capped at the input's rate + 30 %, never under 0.02 bits a pixel.
	if got := PeerTubeBitrate(1080, 1920.0/1080, 25, 1_000_000); got != 1_300_000 {
		t.Errorf("1080p of a 1 Mbit/s upload: %d, want 1300000", got)
	}
	if got := PeerTubeBitrate(1080, 1920.0/1080, 25, 100_000); got != 1036812 {
		t.Errorf("1080p of a 100 kbit/s upload: %d, want the floor 1036812", got)
	}
}

// The quality measure on tiny clips: three ladders, every rung measured,
// the goals computed, the table, the rows and the plot written.
func TestQualityQuick(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rs, err := benchQuality(context.Background(), Options{Quick: true, Only: []string{QualityMeasure}, Runs: 1, ReportDir: dir}, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 5 {
		t.Fatalf("%d results, want 5", len(rs))
	}
	for _, r := range rs {
		if r.Ratio == 0 && r.Kino == 0 {
			t.Errorf("%s: nothing measured: %+v", r.Measure, r)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "quality.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []QualityRung
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(qualityLadders) { // two clips of one rung
		t.Fatalf("%d rows, want %d: %+v", len(rows), 2*len(qualityLadders), rows)
	}
	for _, r := range rows {
		if r.Bytes <= 0 || r.SSIM <= 0.5 || r.SSIM > 1 || r.PSNR <= 20 {
			t.Errorf("implausible measure: %+v", r)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "quality.svg"))
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	points := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("quality.svg is not XML: %v", err)
		}
		if e, ok := tok.(xml.StartElement); ok && e.Name.Local == "circle" {
			points++
		}
	}
	if points != len(rows) {
		t.Errorf("the plot has %d points, want one per row (%d)", points, len(rows))
	}
	if md, err := os.ReadFile(filepath.Join(dir, "quality.md")); err != nil || !bytes.Contains(md, []byte("| screen | 180p | kino |")) {
		t.Errorf("quality.md: %v\n%s", err, md)
	}
}

// TestTableSmallDifference: an SSIM difference of a few thousandths reads
// as itself in the table, not as "-0.00".
func TestTableSmallDifference(t *testing.T) {
	var b bytes.Buffer
	err := Table(&b, []Result{
		{Measure: "ssim", Kino: -0.0029, Ratio: -0.0029, Goal: ">= -0.005", Met: true},
		{Measure: "bytes", Kino: 0.67, Baseline: 1, Ratio: 0.67},
		{Measure: "reads", Kino: 37142, Baseline: 45021, Ratio: 0.825},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| -0.0029 ", "| 0.67 ", "| 37142 ", "| 0.82 "} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestQualityCorpusRepeats: every clip of the corpus is the same pictures
// each time it is generated, so runs and invocations of the bench compare.
func TestQualityCorpusRepeats(t *testing.T) {
	t.Parallel()
	for _, c := range qualityCorpus {
		var sums [2][]byte
		for i := range sums {
			out, err := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi",
				"-i", fmt.Sprintf(c.Source, "320x180"), "-frames:v", "3", "-f", "framemd5", "-").Output()
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			sums[i] = out
		}
		if !bytes.Equal(sums[0], sums[1]) {
			t.Errorf("%s draws other pictures each time:\n%s\n%s", c.Name, sums[0], sums[1])
		}
	}
}
