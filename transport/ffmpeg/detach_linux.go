//go:build linux

package ffmpeg

import (
	"os/exec"
	"syscall"
)

// limitsSupported: util-linux prlimit applies RLimits.
const limitsSupported = true

// confine puts the process in its own process group, so a Ctrl-C or a
// signal to kino's group does not kill it behind kino's back (kino stops it
// through the context and can then tell a shutdown from a failure), kills
// that whole group when the context ends, asks the kernel to SIGKILL it
// when kino dies, and runs it as u when u is set.
//
// Go sets the parent-death signal after switching users (a switch clears
// it); it survives the exec of prlimit and then of ffmpeg, neither being
// set-uid. It fires when the OS thread that started the process exits
// (golang.org/issue/27505): run keeps its goroutine locked to that thread
// until ffmpeg has been waited for, so only kino's death fires it.
func confine(cmd *exec.Cmd, u *User) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if u != nil {
		attr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return killGroup(cmd) }
}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	// The group's id is ffmpeg's pid (Setpgid with Pgid 0).
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
