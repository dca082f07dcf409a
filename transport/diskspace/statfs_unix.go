//go:build unix

package diskspace

import (
	"errors"
	"syscall"
)

var errStatfsUnsupported = errors.New("free disk space unknown on this system")

// statfs is the space an unprivileged writer may still use on dir's file
// system, and the file system's size, in bytes.
func statfs(dir string) (avail, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
