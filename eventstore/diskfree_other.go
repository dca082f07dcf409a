//go:build !unix

package eventstore

import "errors"

// diskFree is unknown here: Heal restarts without waiting for space.
func diskFree(string) (free, size int64, err error) {
	return 0, 0, errors.New("free disk space unknown on this system")
}
