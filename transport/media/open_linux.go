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

	mu     sync.Mutex   // opening the directory
	fd1    atomic.Int64 // 1 + the directory's descriptor (O_PATH) once opened, closed when b is collected; 0 before
	absent atomic.Bool  // openat2 answered ENOSYS or EPERM
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
	root, err := b.root()
	if err != nil {
		return nil, nil, err
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(root, rel, &how)
	runtime.KeepAlive(b) // root stays open until openat2 is done
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

// root is the directory's descriptor, opened on first use; an error (too
// many open files, say) is this call's, and the next one tries again.
func (b *beneath) root() (int, error) {
	if fd1 := b.fd1.Load(); fd1 > 0 {
		return int(fd1 - 1), nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if fd1 := b.fd1.Load(); fd1 > 0 {
		return int(fd1 - 1), nil
	}
	fd, err := unix.Open(b.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: b.dir, Err: err}
	}
	b.fd1.Store(int64(fd) + 1)
	runtime.AddCleanup(b, func(fd int) { unix.Close(fd) }, fd)
	return fd, nil
}
