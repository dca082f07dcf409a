//go:build unix

package transcoder

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kino-video/kino/transport/ffmpeg"
)

// reachable checks that u may pass through every directory from / down to
// dir (each needs the search bit for u: as its owner, its group or other),
// so that ffmpeg running as u can enter its work directory under dir.
func reachable(dir string, u *ffmpeg.User) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := abs; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			mode := fi.Mode().Perm()
			var bit os.FileMode = 0o001
			switch {
			case st.Uid == u.UID:
				bit = 0o100
			case st.Gid == u.GID:
				bit = 0o010
			}
			if mode&bit == 0 {
				return fmt.Errorf("it cannot enter %s (mode %#o): make it passable (chmod o+x), choose another --data, or run ffmpeg as kino's own user with --ffmpeg-user \"\" (less confined: docs/security.md)", d, mode)
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
