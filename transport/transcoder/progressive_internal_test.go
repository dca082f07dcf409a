package transcoder

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The stall rule: playable at once when the encoder outruns playback,
// otherwise once a viewer starting now stays a segment behind it.
func TestPlayableRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		encoded, total, speed float64
		want                  bool
	}{
		{"nothing encoded", 0, 60, 5, false},
		{"faster than real time", 4, 600, 1.2, true},
		{"just real time is not enough once discounted", 4, 60, 1.05, false},
		{"slow, too early", 8, 60, 0.5, false},
		{"slow, lead enough", 40, 60, 0.5, true}, // 60·(1−0.45)+4 = 37
		{"very slow, near the end", 50, 60, 0.1, false},
		{"everything encoded", 60, 60, 0.01, true},
	}
	for _, tt := range tests {
		if got := playable(tt.encoded, tt.total, tt.speed); got != tt.want {
			t.Errorf("%s: playable(%v, %v, %v) = %v", tt.name, tt.encoded, tt.total, tt.speed, got)
		}
	}
}

// Playlists are read from a directory ffmpeg's user writes: a FIFO does
// not block the publisher, a symlink out of the work directory is not
// followed, an oversized file is refused.
func TestReadPlaylistRefusesPlantedFiles(t *testing.T) {
	t.Parallel()
	work, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("#EXTM3U\nsecret"), 0o600); err != nil {
		t.Fatal(err)
	}
	plant := map[string]func(p string) error{
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"symlink": func(p string) error { return os.Symlink(filepath.Join(outside, "secret"), p) },
		"huge":    func(p string) error { return os.WriteFile(p, []byte(strings.Repeat("x", maxPlaylist+1)), 0o644) },
		"fine":    func(p string) error { return os.WriteFile(p, []byte("#EXTM3U\n"), 0o644) },
	}
	root, err := os.OpenRoot(work)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, f := range plant {
		if err := f(filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
		_, err := readPlaylist(root, name)
		if (err == nil) != (name == "fine") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
