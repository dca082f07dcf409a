package eventstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
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
	nc      *nats.Conn
	replies *replies
	bucket  string
	obs     jetstream.ObjectStore
	stream  jetstream.Stream
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
	var o *Objects
	err := s.untilReady(ctx, func() (err error) {
		o, err = s.openObjects(ctx)
		return err
	})
	return o, err
}

func (s *Store) openObjects(ctx context.Context) (*Objects, error) {
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
	return &Objects{nc: s.nc, replies: newReplies(s.nc), bucket: MediaBucket, obs: obs, stream: stream}, nil
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
	if err := o.stream.Purge(ctx, jetstream.WithPurgeSubject(o.metaSubject(name))); err != nil {
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

// Open opens name for reading at any offset. The reader asks for a few
// chunks at a time with one JetStream batch direct get, and knows each
// chunk's place in the object from the count of the object's chunks after
// it (Nats-Num-Pending). It starts where the chunk should lie if the
// object's chunks sit side by side just before its description (as they
// do unless another object was written at the same moment); when that
// guess lands past the chunk, or past all the object's chunks (another
// object's chunks or description stored between its last chunk and its
// description), it starts again from the object's first chunk and skips.
func (o *Objects) Open(ctx context.Context, name string) (*ObjectReader, error) {
	m, err := o.stream.GetLastMsgForSubject(ctx, o.metaSubject(name))
	if err != nil {
		return nil, notFound("open object", name, err)
	}
	var ji jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &ji); err != nil {
		return nil, fmt.Errorf("open object %s: %w", name, err)
	}
	if ji.Deleted {
		return nil, notFound("open object", name, jetstream.ErrObjectNotFound)
	}
	ji.ModTime = m.Time
	info := objectInfo(&ji)
	return &ObjectReader{ctx: ctx, nc: o.nc, replies: o.replies, api: "$JS.API.DIRECT.GET." + mediaStream, info: info,
		subject: "$O." + o.bucket + ".C." + info.nuid, meta: m.Sequence, idx: -1}, nil
}

func (o *Objects) metaSubject(name string) string {
	return "$O." + o.bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// ObjectReader reads one object; it is an io.ReadSeeker, for
// http.ServeContent.
type ObjectReader struct {
	ctx     context.Context
	nc      *nats.Conn
	api     string
	info    ObjectInfo
	subject string
	meta    uint64 // sequence of the object's description

	pos      int64
	cur      []byte // chunk idx, stored at sequence seq
	idx      int
	seq      uint64
	first    uint64 // sequence of chunk 0, once known
	overshot bool   // the guess from meta landed past a chunk

	replies *replies
	batch   chan *nats.Msg // chunks under way, if any
	token   string         // the batch's reply token
	left    int            // chunks the batch has still to deliver
}

// chunksPerBatch bounds the chunks one batch asks for: what a reader
// holds in memory at most (16 × 128 KiB): a typical segment in one round trip.
const chunksPerBatch = 16

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

// Close stops a batch under way and releases the current chunk.
func (r *ObjectReader) Close() error {
	r.stop()
	r.cur = nil
	return nil
}

func (r *ObjectReader) stop() {
	if r.batch != nil {
		r.replies.drop(r.token)
		r.batch = nil
	}
}

// load makes chunk idx current.
func (r *ObjectReader) load(idx int) error {
	for tries := 0; tries < 4*r.info.chunks+8; tries++ {
		if r.batch != nil && idx < r.idx {
			r.stop() // a seek back
		}
		guess := false // the batch starts from the guess from meta
		if r.batch == nil {
			var from uint64
			from, guess = r.start(idx)
			if err := r.request(from, idx); err != nil {
				return err
			}
		}
		m, err := r.next()
		if guess && errors.Is(err, jetstream.ErrMsgNotFound) { // no chunk at or after the guess
			r.stop()
			r.overshot = true
			continue
		}
		if err != nil {
			r.stop()
			return r.chunkErr(err)
		}
		if m == nil { // the batch ended before idx
			r.stop()
			continue
		}
		np, err := strconv.Atoi(m.Header.Get("Nats-Num-Pending"))
		seq, serr := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		j := r.info.chunks - 1 - np
		if err != nil || serr != nil || j < 0 {
			r.stop()
			return r.chunkErr(fmt.Errorf("unexpected direct get answer %v", m.Header))
		}
		if j < r.info.chunks-1 && int64(len(m.Data)) != r.info.chunk {
			r.stop()
			return fmt.Errorf("read object %s: chunk %d holds %d bytes, not %d", r.info.Name, j, len(m.Data), r.info.chunk)
		}
		r.cur, r.idx, r.seq = m.Data, j, seq
		if j == 0 {
			r.first = seq
		}
		switch {
		case j == idx:
			return nil
		case j > idx: // the guess from meta went past it
			r.stop()
			r.overshot = true
		}
	}
	return r.chunkErr(errors.New("chunk not found"))
}

// start is the sequence to ask from for chunk idx: at or before it, but
// for the first guess from the description's sequence (guess), which may
// lie after it or after all the object's chunks.
func (r *ObjectReader) start(idx int) (from uint64, guess bool) {
	switch {
	case r.idx >= 0 && idx > r.idx:
		from = r.seq + 1
		if r.first > 0 {
			from = max(from, r.first+uint64(idx))
		}
		return from, false
	case r.first > 0:
		return r.first + uint64(idx), false
	case !r.overshot && r.meta > uint64(r.info.chunks):
		return r.meta - uint64(r.info.chunks) + uint64(idx), true
	}
	return 1, false
}

// request asks for the object's chunks from sequence from on.
func (r *ObjectReader) request(from uint64, idx int) error {
	r.left = max(1, min(chunksPerBatch, r.info.chunks-idx))
	req, err := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		NextFor string `json:"next_by_subj"`
		Batch   int    `json:"batch"`
	}{from, r.subject, r.left})
	if err != nil {
		return err
	}
	token, ch, err := r.replies.add()
	if err != nil {
		return r.chunkErr(err)
	}
	if err := r.nc.PublishRequest(r.api, r.replies.prefix+token, req); err != nil {
		r.replies.drop(token)
		return r.chunkErr(err)
	}
	r.batch, r.token = ch, token
	return nil
}

// next is the batch's next chunk, or nil at its end.
func (r *ObjectReader) next() (*nats.Msg, error) {
	t := time.NewTimer(objectReadTimeout)
	defer t.Stop()
	var m *nats.Msg
	select {
	case m = <-r.batch:
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	case <-t.C:
		return nil, nats.ErrTimeout
	}
	switch status := m.Header.Get("Status"); status {
	case "":
		if r.left--; r.left == 0 {
			r.stop() // its end of batch is not waited for
		}
		return m, nil
	case "204": // end of batch
		return nil, nil
	case "404":
		return nil, jetstream.ErrMsgNotFound
	default:
		return nil, fmt.Errorf("direct get: %s %s", status, m.Header.Get("Description"))
	}
}

// replies routes the answers to every reader's batches through one
// subscription (as nats.go's request mux does), so a batch costs no
// subscribe and unsubscribe on the server.
type replies struct {
	nc     *nats.Conn
	prefix string

	mu   sync.Mutex
	sub  *nats.Subscription
	next uint64
	open map[string]chan *nats.Msg
}

func newReplies(nc *nats.Conn) *replies {
	return &replies{nc: nc, prefix: nats.NewInbox() + ".", open: map[string]chan *nats.Msg{}}
}

// add opens a batch's reply channel, with room for a whole batch and its
// end, so routing never waits on a reader.
func (p *replies) add() (string, chan *nats.Msg, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sub == nil {
		sub, err := p.nc.Subscribe(p.prefix+"*", p.route)
		if err != nil {
			return "", nil, err
		}
		p.sub = sub
	}
	p.next++
	token := strconv.FormatUint(p.next, 36)
	ch := make(chan *nats.Msg, chunksPerBatch+2)
	p.open[token] = ch
	return token, ch, nil
}

func (p *replies) drop(token string) {
	p.mu.Lock()
	delete(p.open, token)
	p.mu.Unlock()
}

func (p *replies) route(m *nats.Msg) {
	token := m.Subject[len(p.prefix):]
	p.mu.Lock()
	ch := p.open[token]
	p.mu.Unlock()
	if ch != nil {
		select {
		case ch <- m:
		default: // more than a batch: not ours to wait for
		}
	}
}

// objectReadTimeout bounds the wait for one chunk.
const objectReadTimeout = 10 * time.Second

func (r *ObjectReader) chunkErr(err error) error {
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return notFound("read object", r.info.Name, err)
	}
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
	defer r.Close()
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Ready reports whether the bucket answers now: its stream has a leader
// (on a cluster, a quorum of its replicas is up).
func (o *Objects) Ready(ctx context.Context) error {
	if _, err := o.stream.Info(ctx); err != nil {
		return fmt.Errorf("media bucket %s: %w", o.bucket, err)
	}
	return nil
}
