// Package smalldisk gives tests a small file system to fill: the disk-full
// behaviour of the event store and of the embedded server is tested on a
// real full disk.
package smalldisk

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/kino-video/kino/eventstore/internal/diskspace"
)

// Mount mounts a tmpfs of size bytes on a temp dir (tests run as
// root), or skips the test where mounting is not permitted.
func Mount(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a new file in dir until the disk holding dir has at most
// leave bytes free (0: until it is full), and returns the file's name.
func Fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if free, _, err := diskspace.Free(dir); err == nil && free <= leave {
			return f.Name()
		}
		if _, err := f.Write(buf); err != nil {
			return f.Name()
		}
	}
}
