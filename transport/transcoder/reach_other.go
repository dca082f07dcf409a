//go:build !unix

package transcoder

import "github.com/kino-video/kino/transport/ffmpeg"

// reachable: there are no other users to switch to here.
func reachable(string, *ffmpeg.User) error { return nil }
