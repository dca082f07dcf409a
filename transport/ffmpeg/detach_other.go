//go:build !unix

package ffmpeg

import "os/exec"

func detach(*exec.Cmd) {}
