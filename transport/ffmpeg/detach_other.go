//go:build !unix

package ffmpeg

import "os/exec"

const limitsSupported = false

func confine(*exec.Cmd, *User) {}
