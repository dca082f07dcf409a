package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent has cmd's process sent SIGTERM when the bench's ends, so a bench
// that crashes or is killed leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
