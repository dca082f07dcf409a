//go:build !unix

package diskspace

import "errors"

// Free is unknown here: Heal restarts without waiting for space.
func Free(string) (free, size int64, err error) {
	return 0, 0, errors.New("free disk space unknown on this system")
}
