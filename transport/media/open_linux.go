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
//
// The directory is held open (O_PATH), and checked at most once every
// rootCheck to still be what its path names (the same device and inode):
// a directory renamed away and made again, or one a mount now covers, is
// let go and the path opened again, as the writers that go by the path
// see it. A descriptor let go is closed once the last open using it is
// done (rootFD's references), so no open ever resolves a path under a
// descriptor number reused for something else.
type beneath struct {
	dir string

	mu      sync.Mutex              // opening the directory
	cur     *atomic.Pointer[rootFD] // the directory, once opened (apart from b, for its cleanup)
	checked atomic.Int64            // when cur was last checked against the path (Unix ns)
	absent  atomic.Bool             // openat2 answered ENOSYS or EPERM
}

// rootFD is a held descriptor of the directory; refs counts one for being
// beneath's current descriptor and one per open using it. The last
// release closes it.
type rootFD struct {
	fd   int
	refs atomic.Int64
}

// acquire takes a reference unless the descriptor is already closed.
func (r *rootFD) acquire() bool {
	for {
		n := r.refs.Load()
		if n == 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (r *rootFD) release() {
	if r.refs.Add(-1) == 0 {
		unix.Close(r.fd)
	}
}

func newBeneath(dir string) *beneath {
	b := &beneath{dir: dir, cur: new(atomic.Pointer[rootFD])}
	runtime.AddCleanup(b, func(cur *atomic.Pointer[rootFD]) {
		if r := cur.Load(); r != nil {
			r.release()
		}
	}, b.cur)
	return b
}

// errNoOpenat2 says that openat2 is not available here.
var errNoOpenat2 = errors.New("openat2 is not available")

// rootCheck is how often the held directory is checked against its path.
const rootCheck = time.Second

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
	fd, err := unix.Openat2(root.fd, rel, &how)
	root.release()
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

// root is the directory's descriptor, with a reference the caller
// releases. It is opened on first use; an error (too many open files, say)
// is this call's, and the next one tries again. One caller a rootCheck
// checks it against the path, while the others go on with it.
func (b *beneath) root() (*rootFD, error) {
	now := time.Now().UnixNano()
	if r := b.cur.Load(); r != nil {
		last := b.checked.Load()
		if now-last < int64(rootCheck) || !b.checked.CompareAndSwap(last, now) || b.same(r.fd) {
			if r.acquire() {
				return r, nil
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.cur.Load()
	if old != nil && old.fd >= 0 && b.same(old.fd) && old.acquire() {
		return old, nil // another caller reopened it meanwhile, or the check was wrong
	}
	fd, err := unix.Open(b.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if old != nil && old.acquire() {
			return old, nil // the path names nothing now: keep serving what was there
		}
		return nil, &fs.PathError{Op: "open", Path: b.dir, Err: err}
	}
	r := &rootFD{fd: fd}
	r.refs.Store(2) // current, and this caller's
	b.cur.Store(r)
	b.checked.Store(now)
	if old != nil {
		old.release() // no longer current; closed when its last open is done
	}
	return r, nil
}

// same reports whether fd is the directory the path names now.
func (b *beneath) same(fd int) bool {
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Stat(b.dir, &named) != nil {
		return false
	}
	return held.Dev == named.Dev && held.Ino == named.Ino
}
