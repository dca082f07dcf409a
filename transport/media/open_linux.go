package media

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

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

	mu      sync.Mutex   // opening the directory
	fd1     atomic.Int64 // 1 + the directory's descriptor (O_PATH) once opened; 0 before
	checked atomic.Int64 // when fd1 was last found to be what the path names (Unix ns)
	absent  atomic.Bool  // openat2 answered ENOSYS or EPERM
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
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR),
		errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EOPNOTSUPP):
		// A link, a way out, a file where a directory should be; a socket
		// or a device without a driver: none of them a plain file.
		return nil, nil, fs.ErrNotExist
	case err != nil:
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	// O_NONBLOCK kept a FIFO's open from waiting for a writer; a plain
	// file is read the usual way.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
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
// many open files, say) is this call's, and the next one tries again. At
// most once every rootCheck it is checked to still be what the path names
// (the same device and inode): a directory renamed away, or one a mount
// now covers, is let go and the path opened again, as the writers that
// go by the path see it.
func (b *beneath) root() (int, error) {
	now := time.Now().UnixNano()
	if fd1 := b.fd1.Load(); fd1 > 0 && now-b.checked.Load() < int64(rootCheck) {
		return int(fd1 - 1), nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if fd1 := b.fd1.Load(); fd1 > 0 {
		if now-b.checked.Load() < int64(rootCheck) || b.same(int(fd1-1)) {
			b.checked.Store(now)
			return int(fd1 - 1), nil
		}
		b.fd1.Store(0) // the old descriptor is closed when its cleanup runs
	}
	fd, err := unix.Open(b.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: b.dir, Err: err}
	}
	b.fd1.Store(int64(fd) + 1)
	b.checked.Store(now)
	b.release(fd)
	return fd, nil
}

// rootCheck is how often root checks its descriptor against the path.
const rootCheck = time.Second

// same reports whether fd is the directory the path names now.
func (b *beneath) same(fd int) bool {
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Stat(b.dir, &named) != nil {
		return false
	}
	return held.Dev == named.Dev && held.Ino == named.Ino
}

// release closes fd once b is collected: a descriptor let go by root may
// still be in an openat2 of another request, so it is not closed sooner
// (one descriptor per replaced directory).
func (b *beneath) release(fd int) {
	runtime.AddCleanup(b, func(fd int) { unix.Close(fd) }, fd)
}
