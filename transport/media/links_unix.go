//go:build unix

package media

import (
	"io/fs"
	"syscall"
)

// links is the number of hard links to the file fi describes.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// openFlags open a file without following a symlink at its last step, and
// without blocking on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// owner is the user owning the file fi describes; ok false where the
// system does not say.
func owner(fi fs.FileInfo) (uid uint32, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, true
	}
	return 0, false
}
