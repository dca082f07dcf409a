//go:build !linux

package ffmpeg

import "context"

// CheckDiesWithParent: there is no parent-death signal outside Linux, so
// nothing to check; ffmpeg is killed with its group when kino stops it.
func CheckDiesWithParent(context.Context, Jail) error { return nil }
