//go:build !unix

package diskspace

import "errors"

var errStatfsUnsupported = errors.New("free disk space unknown on this system")

// statfs is unknown here: the reserve is not enforced.
func statfs(string) (avail, total uint64, err error) { return 0, 0, errStatfsUnsupported }
