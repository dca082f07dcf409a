//go:build unix

package ffmpeg

import (
	"os/exec"
	"syscall"
)

// detach puts ffmpeg in its own process group, so a Ctrl-C or a signal to
// kino's group does not kill it behind kino's back: kino stops it through
// the context, and can then tell a shutdown (hand the job back) from a
// failure (count an attempt).
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
