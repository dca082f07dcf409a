package media

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// beneath opens files under one directory with openat2: the kernel
// resolves the whole path in one call, refusing any symlink on the way
// (RESOLVE_NO_SYMLINKS) and any step out of the directory
// (RESOLVE_BENEATH), so what took a stat per step takes one open. Where
// the kernel has no openat2 (before Linux 5.6, or a sandbox that forbids
// it) open reports errNoOpenat2 and the caller walks the path itself.
type beneath struct {
	dir string

	once   sync.Once
	fd     int   // the directory, O_PATH, closed when b is collected
	failed error // why the directory could not be opened
	absent atomic.Bool
}

func newBeneath(dir string) *beneath { return &beneath{dir: dir} }

// errNoOpenat2 says that openat2 is not available here.
var errNoOpenat2 = errors.New("openat2 is not available")

// open opens rel (slash-separated) under the directory for reading and
// stats it; it must be a plain file. A symlink anywhere on the way, a step
// out of the directory, a missing entry or anything but a plain file is
// fs.ErrNotExist.
func (b *beneath) open(rel string) (*os.File, fs.FileInfo, error) {
	if b.absent.Load() {
		return nil, nil, errNoOpenat2
	}
	b.once.Do(func() {
		fd, err := unix.Open(b.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			b.failed = &fs.PathError{Op: "open", Path: b.dir, Err: err}
			return
		}
		b.fd = fd
		runtime.AddCleanup(b, func(fd int) { unix.Close(fd) }, fd)
	})
	if b.failed != nil {
		return nil, nil, b.failed
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(b.fd, rel, &how)
	runtime.KeepAlive(b)
	switch {
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		b.absent.Store(true)
		return nil, nil, errNoOpenat2
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR):
		return nil, nil, fs.ErrNotExist // a link, a way out, a file where a directory should be
	case err != nil:
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fs.ErrNotExist
		}
		return nil, nil, err
	}
	return f, fi, nil
}
