package eventstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
)

// MediaBucket is the JetStream Object Store bucket of kino's media when
// it is kept in NATS (kino --media nats).
const MediaBucket = "KINO_MEDIA"

// mediaStream is the stream behind MediaBucket.
const mediaStream = "OBJ_" + MediaBucket

// objectChunk is the chunk size of every object kino writes. Every chunk
// but the last is full (see fullReader), so a reader finds the chunk of an
// offset by division.
const objectChunk = 128 << 10

// Objects is a JetStream Object Store bucket. Callers see names, readers
// and ObjectInfo, never a nats type: a missing object is a domain NotFound.
type Objects struct {
	bucket string
	obs    jetstream.ObjectStore
	stream jetstream.Stream
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Name    string
	Size    int64
	ModTime time.Time // when it was stored (the server's clock)
	Digest  string    // "SHA-256=" and the base64url digest of the bytes
	nuid    string
	chunk   int64
	chunks  int
}

// OpenObjects opens the media bucket. A store that manages kino's streams
// (kino serve) creates it when missing, with the streams' replica count;
// any other (a worker) only opens it.
func (s *Store) OpenObjects(ctx context.Context) (*Objects, error) {
	obs, err := s.js.ObjectStore(ctx, MediaBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && s.cfg.Manage {
		obs, err = s.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      MediaBucket,
			Description: "kino media: originals and processed outputs, named <videoId>/<path>",
			Storage:     jetstream.FileStorage,
			Replicas:    max(s.cfg.Replicas, 1),
		})
	}
	if err != nil {
		return nil, fmt.Errorf("media bucket %s: %w (start kino serve with --media nats first)", MediaBucket, err)
	}
	stream, err := s.js.Stream(ctx, mediaStream)
	if err != nil {
		return nil, fmt.Errorf("media bucket %s: %w", MediaBucket, err)
	}
	return &Objects{bucket: MediaBucket, obs: obs, stream: stream}, nil
}

func objectInfo(i *jetstream.ObjectInfo) ObjectInfo {
	oi := ObjectInfo{Name: i.Name, Size: int64(i.Size), ModTime: i.ModTime, Digest: i.Digest, nuid: i.NUID, chunks: int(i.Chunks), chunk: objectChunk}
	if i.Opts != nil && i.Opts.ChunkSize > 0 {
		oi.chunk = int64(i.Opts.ChunkSize)
	}
	return oi
}

func notFound(op, name string, err error) error {
	if errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrMsgNotFound) {
		return domain.Wrap(op, domain.NotFound, fmt.Errorf("%w: %w", os.ErrNotExist, err), "file not found")
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}

// fullReader fills every Read it can, so each chunk Put cuts is full.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	if err == io.ErrUnexpectedEOF {
		err = nil // the next Read says io.EOF
	}
	return n, err
}

// Put stores r's bytes as name, replacing any object of that name.
func (o *Objects) Put(ctx context.Context, name string, r io.Reader) (ObjectInfo, error) {
	i, err := o.obs.Put(ctx, jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: objectChunk}}, fullReader{r})
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("put object %s: %w", name, err)
	}
	return objectInfo(i), nil
}

// Info describes name; a missing object is NotFound.
func (o *Objects) Info(ctx context.Context, name string) (ObjectInfo, error) {
	i, err := o.obs.GetInfo(ctx, name)
	if err != nil {
		return ObjectInfo{}, notFound("object info", name, err)
	}
	return objectInfo(i), nil
}

// Delete removes name, and the marker the object store leaves in its
// place, so deleted objects cost nothing. A missing object is fine.
func (o *Objects) Delete(ctx context.Context, name string) error {
	if err := o.obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete object %s: %w", name, err)
	}
	meta := "$O." + o.bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	if err := o.stream.Purge(ctx, jetstream.WithPurgeSubject(meta)); err != nil {
		return fmt.Errorf("delete object %s: %w", name, err)
	}
	return nil
}

// List describes every object in the bucket. It reads every object's
// description: a maintenance pass, not a request path.
func (o *Objects) List(ctx context.Context) ([]ObjectInfo, error) {
	all, err := o.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	out := make([]ObjectInfo, len(all))
	for i, oi := range all {
		out[i] = objectInfo(oi)
	}
	return out, nil
}

// Bytes is the size of the bucket's stream (data and descriptions).
func (o *Objects) Bytes(ctx context.Context) (uint64, error) {
	st, err := o.obs.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("media bucket status: %w", err)
	}
	return st.Size(), nil
}

// Open opens name for reading at any offset. The reader loads one chunk
// at a time with JetStream direct gets: a read from the start follows the
// chunks by subject; a seek goes straight to the chunk holding the offset
// when the object's chunks lie side by side in the stream (as they do
// unless another object was written at the same moment), and otherwise
// walks the chunks from the first without keeping them.
func (o *Objects) Open(ctx context.Context, name string) (*ObjectReader, error) {
	info, err := o.Info(ctx, name)
	if err != nil {
		return nil, err
	}
	return &ObjectReader{ctx: ctx, stream: o.stream, info: info, subject: "$O." + o.bucket + ".C." + info.nuid, idx: -1}, nil
}

// ObjectReader reads one object; it is an io.ReadSeeker, for
// http.ServeContent.
type ObjectReader struct {
	ctx     context.Context
	stream  jetstream.Stream
	info    ObjectInfo
	subject string

	pos      int64
	cur      []byte // chunk idx, stored at sequence seq
	idx      int
	seq      uint64
	first    uint64 // sequence of chunk 0, once known
	adjacent int    // 1: chunks are side by side, -1: not, 0: unknown
}

// Info describes the object being read.
func (r *ObjectReader) Info() ObjectInfo { return r.info }

// Seek sets the offset of the next Read.
func (r *ObjectReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.info.Size
	}
	if offset < 0 {
		return r.pos, errors.New("object reader: negative offset")
	}
	r.pos = offset
	return offset, nil
}

func (r *ObjectReader) Read(p []byte) (int, error) {
	if r.pos >= r.info.Size {
		return 0, io.EOF
	}
	idx := int(r.pos / r.info.chunk)
	if idx != r.idx {
		if err := r.load(idx); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.cur[r.pos-int64(idx)*r.info.chunk:])
	r.pos += int64(n)
	return n, nil
}

// Close releases the current chunk.
func (r *ObjectReader) Close() error { r.cur = nil; return nil }

// load makes chunk idx current.
func (r *ObjectReader) load(idx int) error {
	var (
		m   *jetstream.RawStreamMsg
		err error
	)
	switch {
	case r.idx >= 0 && idx == r.idx+1: // reading on
		m, err = r.next(r.seq + 1)
	case idx == 0:
		m, err = r.next(1)
	default:
		if r.first == 0 {
			if err := r.load(0); err != nil {
				return err
			}
			if idx == 0 {
				return nil
			}
		}
		if r.adjacent == 0 {
			r.adjacent = -1
			last, err := r.stream.GetLastMsgForSubject(r.ctx, r.subject)
			if err != nil {
				return r.chunkErr(err)
			}
			if last.Sequence == r.first+uint64(r.info.chunks)-1 {
				r.adjacent = 1
			}
		}
		if r.adjacent == 1 {
			m, err = r.stream.GetMsg(r.ctx, r.first+uint64(idx))
			if err == nil && m.Subject != r.subject {
				return r.chunkErr(jetstream.ErrMsgNotFound) // replaced meanwhile
			}
			break
		}
		// Walk from the nearest known chunk before idx.
		from, at := r.first, 0
		if r.idx >= 0 && r.idx < idx {
			from, at = r.seq, r.idx
		}
		for m = nil; at < idx; at++ {
			if m, err = r.next(from + 1); err != nil {
				return r.chunkErr(err)
			}
			from = m.Sequence
		}
	}
	if err != nil {
		return r.chunkErr(err)
	}
	if idx < r.info.chunks-1 && int64(len(m.Data)) != r.info.chunk {
		return fmt.Errorf("read object %s: chunk %d holds %d bytes, not %d", r.info.Name, idx, len(m.Data), r.info.chunk)
	}
	r.cur, r.idx, r.seq = m.Data, idx, m.Sequence
	if idx == 0 {
		r.first = m.Sequence
	}
	return nil
}

// next is the first chunk of the object at or after sequence seq.
func (r *ObjectReader) next(seq uint64) (*jetstream.RawStreamMsg, error) {
	return r.stream.GetMsg(r.ctx, seq, jetstream.WithGetMsgSubject(r.subject))
}

func (r *ObjectReader) chunkErr(err error) error {
	return fmt.Errorf("read object %s (deleted or replaced while read?): %w", r.info.Name, err)
}

// GetFile copies name into a new local file at path (mode 0600).
func (o *Objects) GetFile(ctx context.Context, name, path string) error {
	r, err := o.Open(ctx, name)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
