package media

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// cache keeps copies of objects served on /cdn in a local directory, named
// by their SHA-256, so a segment read again goes out from the local disk
// instead of from the object store. A name's digest changes when it is
// published again, and every read first looks the object up in the store
// (a segment's description is used for a second: stats), so a copy is
// never served for a deleted or replaced object (a segment: not a second
// after). The oldest copies go when the directory holds more than max
// bytes.
type cache struct {
	dir string
	max int64

	mu   sync.Mutex
	used int64

	fills singleflight.Group // by digest: one fetch per missing copy

	hits, misses atomic.Uint64 // reads served from a copy, or not (Bucket.Open)
}

// cacheable is the largest object copied: segments, thumbnails and
// previews, not a whole film.
const cacheable = 64 << 20

// digestName matches the base64url SHA-256 digests used as file names.
var digestName = regexp.MustCompile(`^[A-Za-z0-9_-]{43}=?$`)

func openCache(dir string, max int64) (*cache, error) {
	if err := os.MkdirAll(dir, modePrivate); err != nil {
		return nil, err
	}
	c := &cache{dir: dir, max: max}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if !digestName.MatchString(e.Name()) || !fi.Mode().IsRegular() {
			_ = os.RemoveAll(filepath.Join(dir, e.Name())) // a fill cut short
			continue
		}
		c.used += fi.Size()
	}
	return c, nil
}

// lookup opens the local copy of the object of digest and size, if there
// is one.
func (c *cache) lookup(digest string, size int64) *os.File {
	key := strings.TrimPrefix(digest, "SHA-256=")
	if c == nil || size > cacheable || !digestName.MatchString(key) {
		return nil
	}
	f, err := os.Open(filepath.Join(c.dir, key))
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err == nil && fi.Size() == size {
		return f
	}
	f.Close()
	return nil
}

// fillTimeout bounds one fetch of an object into the cache.
const fillTimeout = time.Minute

// fill returns the local copy of the object with digest and size, made
// from fetch if missing, or nil when there is none (not cacheable, or the
// fetch failed: the caller reads the store itself). Concurrent misses of
// one object fetch it once: the others wait for that copy. A video's
// first segment asked by a crowd of players at once would otherwise be
// read from the store by each of them, and the store, overwhelmed, answer
// none in time. The fetch does not end with the request that began it:
// the others wait for it too, each as long as its own ctx lasts. The copy
// is kept only if the object fetched is the one described (digest and
// size): a name published again between the two must not be stored under
// the old digest, where another video's identical bytes would find it.
func (c *cache) fill(ctx context.Context, digest string, size int64, fetch func(context.Context) (io.ReadCloser, ObjectInfo, error)) *os.File {
	if c == nil || size > cacheable || !digestName.MatchString(strings.TrimPrefix(digest, "SHA-256=")) {
		return nil
	}
	done := c.fills.DoChan(digest, func() (any, error) {
		if f := c.lookup(digest, size); f != nil { // filled since the caller looked
			return nil, f.Close()
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fillTimeout)
		defer cancel()
		r, info, err := fetch(fctx)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if info.Digest != digest || info.Size != size {
			return nil, nil
		}
		if f := c.open(digest, size, r); f != nil {
			return nil, f.Close()
		}
		return nil, nil
	})
	select {
	case <-done:
		return c.lookup(digest, size)
	case <-ctx.Done():
		return nil
	}
}

// open returns the local copy of the object with digest and size, filling
// it from r when missing; nil when it cannot (the caller reads r).
func (c *cache) open(digest string, size int64, r io.Reader) *os.File {
	if f := c.lookup(digest, size); f != nil {
		return f
	}
	key := strings.TrimPrefix(digest, "SHA-256=")
	if c == nil || size > cacheable || !digestName.MatchString(key) {
		return nil
	}
	p := filepath.Join(c.dir, key)
	tmp, err := os.CreateTemp(c.dir, ".fill-*")
	if err != nil {
		return nil
	}
	n, err := io.Copy(tmp, r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil || n != size || os.Rename(tmp.Name(), p) != nil {
		_ = os.Remove(tmp.Name())
		return nil
	}
	c.mu.Lock()
	c.used += size
	over := c.used > c.max
	c.mu.Unlock()
	if over {
		c.evict()
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	return f
}

// evict removes the oldest copies until the cache holds 90 % of max.
func (c *cache) evict() {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type entry struct {
		name string
		fi   os.FileInfo
	}
	var all []entry
	var used int64
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && digestName.MatchString(e.Name()) {
			all = append(all, entry{e.Name(), fi})
			used += fi.Size()
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return a.fi.ModTime().Compare(b.fi.ModTime()) })
	for _, e := range all {
		if used <= c.max*9/10 {
			break
		}
		if os.Remove(filepath.Join(c.dir, e.name)) == nil {
			used -= e.fi.Size()
		}
	}
	c.used = used
}
