package media

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"time"

	"github.com/kino-video/kino/domain"
)

// ObjectStore is what a Bucket needs of an object store: a flat namespace
// of objects, each written whole and read from any offset. Bucket builds
// the names (<videoId>/<path>, slash-separated, the id checked first) and
// keeps the rest, each video's index, the local cache and scratch, above
// it. A missing object is an error for which errors.Is(err,
// fs.ErrNotExist) holds; Bucket makes it a NotFound for its callers.
type ObjectStore interface {
	// Put stores r's bytes as name, replacing any object of that name in
	// one step: a reader sees the old bytes or the new ones.
	Put(ctx context.Context, name string, r io.Reader) (ObjectInfo, error)
	// Get reads name from byte offset to its end, and describes the
	// object those bytes are of.
	Get(ctx context.Context, name string, offset int64) (io.ReadCloser, ObjectInfo, error)
	// Stat describes name.
	Stat(ctx context.Context, name string) (ObjectInfo, error)
	// List describes every object (Digest may be empty): a maintenance
	// pass (Bucket.Reconcile), not a request path.
	List(ctx context.Context) ([]ObjectInfo, error)
	// Delete removes name; removing a missing object is fine.
	Delete(ctx context.Context, name string) error
	// Ready reports whether the store answers now.
	Ready(ctx context.Context) error
}

// ObjectOpener is an ObjectStore that reads an object at any offset
// itself, better than a Get after each seek (the JetStream bucket fetches
// the chunks of an offset). Bucket uses Open when its store has it.
type ObjectOpener interface {
	Open(ctx context.Context, name string) (io.ReadSeekCloser, ObjectInfo, error)
}

// ObjectPresigner is an ObjectStore that hands out short-lived URLs that
// read an object without credentials (S3's presigned GETs), answered with
// the given Content-Type and Cache-Control.
type ObjectPresigner interface {
	Presign(ctx context.Context, name string, ttl time.Duration, contentType, cacheControl string) (*url.URL, error)
}

// IncompleteAborter is an ObjectStore that keeps the parts of writes
// that never ended (S3's multipart uploads of a process that died):
// Reconcile aborts those begun more than a day ago, under the store's
// other objects.
type IncompleteAborter interface {
	AbortIncomplete(ctx context.Context, olderThan time.Duration) (aborted []string, err error)
}

// incompleteAge is how old an unfinished write must be to be aborted: far
// longer than any upload of an original takes.
const incompleteAge = 24 * time.Hour

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Name    string
	Size    int64
	ModTime time.Time // when it was stored
	// Digest is "SHA-256=" and the base64url SHA-256 of the bytes, or ""
	// when the store does not keep it: then Bucket caches no copy of the
	// object, serves a weak ETag, and Publish stores every output again.
	Digest string
}

// openObject opens name of s for reading at any offset: with s's own
// Open, or with a Get from the start and another after each seek.
func openObject(ctx context.Context, s ObjectStore, name string) (io.ReadSeekCloser, ObjectInfo, error) {
	if o, ok := s.(ObjectOpener); ok {
		return o.Open(ctx, name)
	}
	rc, info, err := s.Get(ctx, name, 0)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	return &getReader{ctx: ctx, store: s, info: info, rc: rc}, info, nil
}

// getReader reads an object through Gets: the one it was opened with while
// reads follow each other, and a new one from the offset after a seek. The
// object replaced meanwhile fails the read with NotFound, as the JetStream
// reader does.
type getReader struct {
	ctx   context.Context
	store ObjectStore
	info  ObjectInfo

	pos int64
	rc  io.ReadCloser // reading at offset at; nil: none
	at  int64
}

func (r *getReader) Read(p []byte) (int, error) {
	if r.pos >= r.info.Size {
		return 0, io.EOF
	}
	if r.rc != nil && r.at != r.pos {
		r.rc.Close()
		r.rc = nil
	}
	if r.rc == nil {
		rc, info, err := r.store.Get(r.ctx, r.info.Name, r.pos)
		if err != nil {
			return 0, err
		}
		if info.Size != r.info.Size || info.Digest != r.info.Digest || !info.ModTime.Equal(r.info.ModTime) {
			rc.Close()
			return 0, domain.Wrap("media", domain.NotFound, fmt.Errorf("object %s replaced while read: %w", r.info.Name, fs.ErrNotExist), "file not found")
		}
		r.rc, r.at = rc, r.pos
	}
	n, err := r.rc.Read(p)
	r.pos += int64(n)
	r.at = r.pos
	if err == io.EOF && r.pos < r.info.Size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Seek sets the offset of the next Read; the Get under way goes on if the
// next Read is where it stands.
func (r *getReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.info.Size
	}
	if offset < 0 {
		return r.pos, fmt.Errorf("object %s: negative offset", r.info.Name)
	}
	r.pos = offset
	return offset, nil
}

func (r *getReader) Close() error {
	if r.rc == nil {
		return nil
	}
	err := r.rc.Close()
	r.rc = nil
	return err
}
