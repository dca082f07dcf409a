//go:build unix

package transcoder

import (
	"os"
	"syscall"
)

// canLock: sweeps can tell a dead attempt from a running one.
const canLock = true

// lockFile takes an exclusive flock on f without waiting. The lock belongs
// to the open file: another open of the same file, in this process or
// another, cannot take it, and it goes when the process dies.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
