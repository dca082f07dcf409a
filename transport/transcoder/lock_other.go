//go:build !unix

package transcoder

import "os"

// canLock: there is no flock here; sweeps remove nothing.
const canLock = false

func lockFile(*os.File) error { return nil }
