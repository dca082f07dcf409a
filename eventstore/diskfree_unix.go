//go:build unix

package eventstore

import "syscall"

// diskFree is the space (bytes) an unprivileged writer may still use on
// dir's file system.
func diskFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}
