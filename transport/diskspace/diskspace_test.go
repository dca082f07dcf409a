package diskspace_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kino-video/kino/transport/diskspace"
)

func TestParseReserve(t *testing.T) {
	tests := []struct {
		in   string
		want diskspace.Reserve
		bad  bool
	}{
		{in: "1GiB", want: diskspace.Reserve{Bytes: 1 << 30}},
		{in: "512MiB", want: diskspace.Reserve{Bytes: 512 << 20}},
		{in: "4096", want: diskspace.Reserve{Bytes: 4096}},
		{in: "0", want: diskspace.Reserve{}},
		{in: "5%", want: diskspace.Reserve{Percent: 5}},
		{in: "2.5%", want: diskspace.Reserve{Percent: 2.5}},
		{in: "100%", bad: true},
		{in: "-1GiB", bad: true},
		{in: "lots", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := diskspace.ParseReserve(tt.in)
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("diskspace.ParseReserve(%q) = %+v, %v", tt.in, got, err)
			}
		})
	}
}

// A Writer stops once the guarded file system's free space is inside the
// reserve, and checks only every Every bytes; with no directories there
// is no reserve.
func TestWriterStopsInsideTheReserve(t *testing.T) {
	dir := t.TempDir()
	if room, err := (diskspace.Guard{Dirs: []string{dir}}).Room(); err != nil || room <= 0 {
		t.Skipf("no free space known here: %d, %v", room, err)
	}
	var sink bytes.Buffer
	w := &diskspace.Writer{W: &sink, Guard: diskspace.Guard{Dirs: []string{dir}, Reserve: diskspace.Reserve{Bytes: 1 << 62}, Every: 10}}
	if _, err := w.Write(make([]byte, 5)); err != nil {
		t.Fatalf("before Every bytes: %v", err)
	}
	if _, err := w.Write(make([]byte, 5)); !errors.Is(err, diskspace.ErrNoRoom) {
		t.Fatalf("inside the reserve: %v", err)
	}
	free := &diskspace.Writer{W: &sink, Guard: diskspace.Guard{Every: 1}}
	if _, err := free.Write(make([]byte, 5)); err != nil {
		t.Fatalf("no directories guarded: %v", err)
	}
}
