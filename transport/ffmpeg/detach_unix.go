//go:build unix && !linux

package ffmpeg

import (
	"os/exec"
	"syscall"
)

// limitsSupported: there is no util-linux prlimit here; RLimits are not
// applied.
const limitsSupported = false

// confine puts the process in its own process group (see detach_linux.go),
// kills that whole group when the context ends and runs it as u when u is
// set. There is no parent-death signal outside Linux.
func confine(cmd *exec.Cmd, u *User) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		attr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
