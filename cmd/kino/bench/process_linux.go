package bench

import (
	"os/exec"
	"syscall"
	"time"
)

// dieWithParent has cmd's process sent SIGTERM when the bench's ends, so a bench
// that crashes or is killed leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}

// childrenCPU is the CPU seconds (user and system) of every child process
// the bench has waited for so far: a difference of two readings is what
// the children waited for between them spent, however many ran at once.
func childrenCPU() (float64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), true
}
