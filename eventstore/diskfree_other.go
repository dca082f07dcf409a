//go:build !unix

package eventstore

import "errors"

// diskFree is unknown here: Heal restarts without waiting for space.
func diskFree(string) (int64, error) { return 0, errors.New("free disk space unknown on this system") }
