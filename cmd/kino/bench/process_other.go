//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a process's end
// to its parent's.
func dieWithParent(*exec.Cmd) {}

// childrenCPU is not read here: callers count wall-clock time instead.
func childrenCPU() (float64, bool) { return 0, false }
