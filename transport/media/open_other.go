//go:build !linux

package media

import (
	"errors"
	"io/fs"
	"os"
)

// beneath is openat2's resolution where there is none: open always
// reports errNoOpenat2, and the caller walks the path itself.
type beneath struct{}

func newBeneath(string) *beneath { return &beneath{} }

var errNoOpenat2 = errors.New("openat2 is not available")

func (*beneath) open(string) (*os.File, fs.FileInfo, error) { return nil, nil, errNoOpenat2 }
