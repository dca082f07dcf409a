package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// reader reads one object; it is an io.ReadSeeker, for
// http.ServeContent.
type reader struct {
	ctx     context.Context
	nc      *nats.Conn
	api     string
	info    objectMeta
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

// Seek sets the offset of the next Read.
func (r *reader) Seek(offset int64, whence int) (int64, error) {
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

func (r *reader) Read(p []byte) (int, error) {
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
func (r *reader) Close() error {
	r.stop()
	r.cur = nil
	return nil
}

func (r *reader) stop() {
	if r.batch != nil {
		r.replies.drop(r.token)
		r.batch = nil
	}
}

// load makes chunk idx current.
func (r *reader) load(idx int) error {
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
func (r *reader) start(idx int) (from uint64, guess bool) {
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
func (r *reader) request(from uint64, idx int) error {
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
func (r *reader) next() (*nats.Msg, error) {
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
	inbox := nats.NewInbox()
	if p := nc.Opts.InboxPrefix; p != "" { // a worker's own prefix: the only inbox its role hears
		inbox = p + strings.TrimPrefix(inbox, "_INBOX")
	}
	return &replies{nc: nc, prefix: inbox + ".", open: map[string]chan *nats.Msg{}}
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

func (r *reader) chunkErr(err error) error {
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return notFound("read object", r.info.Name, err)
	}
	return fmt.Errorf("read object %s (deleted or replaced while read?): %w", r.info.Name, err)
}
