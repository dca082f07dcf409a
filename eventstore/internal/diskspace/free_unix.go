//go:build unix

// Package diskspace measures the free space on a file system: what Heal
// waits for before restarting a server whose disk was full, and what the
// disk-filling tests fill to.
package diskspace

import "syscall"

// Free is the space (bytes) an unprivileged writer may still use on
// dir's file system, and that file system's size.
func Free(dir string) (free, size int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), int64(uint64(st.Blocks) * uint64(st.Bsize)), nil
}
