package captions

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what Parse writes")

// TestGolden reads each caption file in testdata and compares the WebVTT
// written with the file beside it named after it plus ".golden".
func TestGolden(t *testing.T) {
	for _, file := range captionFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			in, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tr, format, err := Parse(in)
			if err != nil {
				t.Fatal(err)
			}
			if want := Format(strings.TrimPrefix(filepath.Ext(file), ".")); want == "vtt" && format != FormatWebVTT || want == "srt" && format != FormatSRT {
				t.Errorf("read as %s", format)
			}
			checkTrack(t, tr)
			got := tr.WebVTT()
			golden := file + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// captionFiles lists the caption files in testdata, each beside its
// golden WebVTT.
func captionFiles(t testing.TB) []string {
	t.Helper()
	srt, err1 := filepath.Glob(filepath.Join("testdata", "*.srt"))
	vtt, err2 := filepath.Glob(filepath.Join("testdata", "*.vtt"))
	files := append(srt, vtt...)
	if err1 != nil || err2 != nil || len(files) == 0 {
		t.Fatal("no caption files in testdata")
	}
	return files
}
