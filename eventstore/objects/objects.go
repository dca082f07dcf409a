package objects

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
	"github.com/kino-video/kino/transport/media"
)

// objectChunk is the chunk size of every object kino writes. Every chunk
// but the last is full (see fullReader), so a reader finds the chunk of an
// offset by division.
const objectChunk = 128 << 10

// Bucket is the media bucket, eventstore.MediaBucket.
type Bucket struct {
	nc      *nats.Conn
	replies *replies
	bucket  string
	obs     jetstream.ObjectStore
	stream  jetstream.Stream
}

var (
	_ media.ObjectStore  = (*Bucket)(nil)
	_ media.ObjectOpener = (*Bucket)(nil)
)

// Open opens the media bucket of store. A store that manages kino's
// streams (kino serve) creates it when missing, with the streams' replica
// count; any other (a worker) only opens it.
func Open(ctx context.Context, store *eventstore.Store) (*Bucket, error) {
	c := store.NATS()
	var b *Bucket
	err := c.UntilReady(ctx, func() (err error) {
		b, err = open(ctx, c)
		return err
	})
	return b, err
}

func open(ctx context.Context, c *natsconn.Conn) (*Bucket, error) {
	obs, err := c.JS.ObjectStore(ctx, eventstore.MediaBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && c.Manage {
		obs, err = c.JS.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      eventstore.MediaBucket,
			Description: "kino media: originals and processed outputs, named <videoId>/<path>",
			Storage:     jetstream.FileStorage,
			Replicas:    c.Replicas,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("media bucket %s: %w (start kino serve with --media nats first)", eventstore.MediaBucket, err)
	}
	stream, err := c.JS.Stream(ctx, mediaStream)
	if err != nil {
		return nil, fmt.Errorf("media bucket %s: %w", eventstore.MediaBucket, err)
	}
	return &Bucket{nc: c.NC, replies: newReplies(c.NC), bucket: eventstore.MediaBucket, obs: obs, stream: stream}, nil
}

// mediaStream is the stream behind the media bucket.
const mediaStream = "OBJ_" + eventstore.MediaBucket

// objectMeta is what a reader needs of an object's description.
type objectMeta struct {
	media.ObjectInfo
	nuid   string
	chunk  int64
	chunks int
}

func describe(i *jetstream.ObjectInfo) objectMeta {
	m := objectMeta{ObjectInfo: media.ObjectInfo{Name: i.Name, Size: int64(i.Size), ModTime: i.ModTime, Digest: i.Digest},
		nuid: i.NUID, chunks: int(i.Chunks), chunk: objectChunk}
	if i.Opts != nil && i.Opts.ChunkSize > 0 {
		m.chunk = int64(i.Opts.ChunkSize)
	}
	return m
}

func notFound(op, name string, err error) error {
	if errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrMsgNotFound) {
		return domain.Wrap(op, domain.NotFound, fmt.Errorf("%w: %w", fs.ErrNotExist, err), "file not found")
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
func (b *Bucket) Put(ctx context.Context, name string, r io.Reader) (media.ObjectInfo, error) {
	i, err := b.obs.Put(ctx, jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: objectChunk}}, fullReader{r})
	if err != nil {
		return media.ObjectInfo{}, fmt.Errorf("put object %s: %w", name, err)
	}
	return describe(i).ObjectInfo, nil
}

// Stat describes name; a missing object is NotFound.
func (b *Bucket) Stat(ctx context.Context, name string) (media.ObjectInfo, error) {
	i, err := b.obs.GetInfo(ctx, name)
	if err != nil {
		return media.ObjectInfo{}, notFound("object info", name, err)
	}
	return describe(i).ObjectInfo, nil
}

// Delete removes name, and the marker the object store leaves in its
// place, so deleted objects cost nothing. A missing object is fine.
func (b *Bucket) Delete(ctx context.Context, name string) error {
	if err := b.obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("delete object %s: %w", name, err)
	}
	if err := b.stream.Purge(ctx, jetstream.WithPurgeSubject(b.metaSubject(name))); err != nil {
		return fmt.Errorf("delete object %s: %w", name, err)
	}
	return nil
}

// List describes every object in the bucket. It reads every object's
// description: a maintenance pass, not a request path.
func (b *Bucket) List(ctx context.Context) ([]media.ObjectInfo, error) {
	all, err := b.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	out := make([]media.ObjectInfo, len(all))
	for i, oi := range all {
		out[i] = describe(oi).ObjectInfo
	}
	return out, nil
}

// Get reads name from offset to its end.
func (b *Bucket) Get(ctx context.Context, name string, offset int64) (io.ReadCloser, media.ObjectInfo, error) {
	r, info, err := b.Open(ctx, name)
	if err != nil {
		return nil, info, err
	}
	if _, err := r.Seek(offset, io.SeekStart); err != nil {
		r.Close()
		return nil, media.ObjectInfo{}, fmt.Errorf("get object %s: %w", name, err)
	}
	return r, info, nil
}

// Open opens name for reading at any offset. The reader asks for a few
// chunks at a time with one JetStream batch direct get, and knows each
// chunk's place in the object from the count of the object's chunks after
// it (Nats-Num-Pending). It starts where the chunk should lie if the
// object's chunks sit side by side just before its description (as they
// do unless another object was written at the same moment); when that
// guess lands past the chunk, or past all the object's chunks (another
// object's chunks or description stored between its last chunk and its
// description), it starts again from the object's first chunk and skips.
func (b *Bucket) Open(ctx context.Context, name string) (io.ReadSeekCloser, media.ObjectInfo, error) {
	m, err := b.stream.GetLastMsgForSubject(ctx, b.metaSubject(name))
	if err != nil {
		return nil, media.ObjectInfo{}, notFound("open object", name, err)
	}
	var ji jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &ji); err != nil {
		return nil, media.ObjectInfo{}, fmt.Errorf("open object %s: %w", name, err)
	}
	if ji.Deleted {
		return nil, media.ObjectInfo{}, notFound("open object", name, jetstream.ErrObjectNotFound)
	}
	ji.ModTime = m.Time
	meta := describe(&ji)
	return &reader{ctx: ctx, nc: b.nc, replies: b.replies, api: "$JS.API.DIRECT.GET.OBJ_" + b.bucket, info: meta,
		subject: "$O." + b.bucket + ".C." + meta.nuid, meta: m.Sequence, idx: -1}, meta.ObjectInfo, nil
}

func (b *Bucket) metaSubject(name string) string {
	return "$O." + b.bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// Ready reports whether the bucket answers now: its stream has a leader
// (on a cluster, a quorum of its replicas is up).
func (b *Bucket) Ready(ctx context.Context) error {
	if _, err := b.stream.Info(ctx); err != nil {
		return fmt.Errorf("media bucket %s: %w", b.bucket, err)
	}
	return nil
}
