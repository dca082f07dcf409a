//go:build !unix

package media

import "io/fs"

// links is the number of hard links to the file fi describes; 1 where the
// system does not say.
func links(fs.FileInfo) uint64 { return 1 }

// openFlags: no O_NOFOLLOW here; PublishFiles checks with Lstat instead.
const openFlags = 0

// owner: unknown where the system does not say.
func owner(fs.FileInfo) (uint32, bool) { return 0, false }
