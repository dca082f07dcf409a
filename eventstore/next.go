package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
)

// Next returns the first event whose sequence is at least from and whose
// subject matches filter (wildcards allowed); ok is false when the stream
// holds none. A message that does not decode, or is stored under another
// subject than its body names, comes back as a domain.Refused event with
// its sequence, so a caller walking the stream can step over it.
//
// Unlike Load, which uses direct gets (any replica may answer, and a
// follower may lag), Next asks the stream's leader: when an event at
// sequence S has been delivered, Next sees every message up to S. Readers
// that must see the stream as of an event (the webhook fan-out) use it.
func (s *Store) Next(ctx context.Context, filter string, from uint64) (domain.Event, bool, error) {
	m, ok, err := s.leaderGet(ctx, StreamName, struct {
		Seq  uint64 `json:"seq"`
		Next string `json:"next_by_subj"`
	}{max(from, 1), filter})
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("read %s from %d: %w", filter, from, err)
		}
		return domain.Event{}, false, err
	}
	var typ string
	if len(m.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(m.Header)
		if err != nil {
			return domain.Event{}, false, fmt.Errorf("read %s from %d: %w", filter, from, err)
		}
		typ = h.Get(HeaderEventType)
	}
	return s.decodeStored(m.Subject, typ, m.Data, m.Seq), true, nil
}

// LastOf is the sequence of the last message whose subject matches filter
// (wildcards allowed), 0 when there is none, read as Next reads (from the
// leader). The stream's subject index answers it at once, where Next's
// answer that nothing matches past a sequence can read every message after
// it (with more than 64k subjects): a walk that knows where to stop never
// asks that.
func (s *Store) LastOf(ctx context.Context, filter string) (uint64, error) {
	m, ok, err := s.leaderGet(ctx, StreamName, struct {
		Last string `json:"last_by_subj"`
	}{filter})
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("read the last of %s: %w", filter, err)
		}
		return 0, err
	}
	return m.Seq, nil
}

// StoredMsg is a message as STREAM.MSG.GET answers it.
type StoredMsg struct {
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
	Header  []byte `json:"hdrs"`
	Data    []byte `json:"data"`
}

// LeaderLast is the last message stored under subject in stream (any
// stream kino's connection may read, a KV bucket's KV_<bucket> included),
// asked of the stream's leader, as Next asks: a direct get may be answered
// by a replica behind the write. ok is false when there is none; a missing
// stream is an error wrapping jetstream.ErrStreamNotFound.
func (s *Store) LeaderLast(ctx context.Context, stream, subject string) (*StoredMsg, bool, error) {
	return s.leaderGet(ctx, stream, struct {
		Last string `json:"last_by_subj"`
	}{subject})
}

// leaderGet asks stream's leader for one message (STREAM.MSG.GET with
// req); ok is false when none matches. While the stream has no leader (an
// election after a node was lost), the servers answer at once that the
// cluster is not available, or not at all: leaderGet asks again, a little
// later each time, until ctx ends (10 s when it has no deadline), rather
// than fall back on a replica. Under FailFast (a request with a client
// waiting) it asks once, and a stream without a leader is Unavailable.
func (s *Store) leaderGet(ctx context.Context, stream string, req any) (*StoredMsg, bool, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, false, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	if failFast(ctx) {
		// A client is waiting: one request, and Unavailable (503) when
		// the stream has no leader, whether the servers say so at once or
		// do not answer within leaderAnswerWait.
		m, ok, err := s.leaderGetOnce(ctx, stream, body, leaderAnswerWait)
		if errors.Is(err, errNoLeader) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = unavailable("read "+stream, err)
		}
		return m, ok, err
	}
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		m, ok, err := s.leaderGetOnce(ctx, stream, body, leaderAnswerWait)
		if !errors.Is(err, errNoLeader) && !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return m, ok, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, err
		case <-t.C:
		}
	}
}

// errNoLeader: the servers answered that the stream has no leader now
// (JetStream's "cluster not available", 10008).
var errNoLeader = errors.New("the stream has no leader now")

const jsErrClusterNotAvailable = 10008

// leaderAnswerWait bounds one request of leaderGet's: a server that
// lost its stream's leader may not answer at all, and the request is
// sent again. The last request gets whatever time is left, so that a slow
// leader still answers within the context.
const leaderAnswerWait = 3 * time.Second

// leaderGetOnce sends one request, bounded by bound (none when 0, or when
// less than twice it is left).
func (s *Store) leaderGetOnce(ctx context.Context, stream string, body []byte, bound time.Duration) (*StoredMsg, bool, error) {
	if d, ok := ctx.Deadline(); bound > 0 && (!ok || time.Until(d) >= 2*bound) {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	reply, err := s.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, false, err
	}
	var resp struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *StoredMsg `json:"message"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, false, err
	}
	if resp.Error != nil {
		switch resp.Error.ErrCode {
		case int(jetstream.JSErrCodeMessageNotFound):
			return nil, false, nil
		case jsErrClusterNotAvailable:
			return nil, false, fmt.Errorf("%w: %s (%d)", errNoLeader, resp.Error.Description, resp.Error.ErrCode)
		case int(jetstream.JSErrCodeStreamNotFound):
			return nil, false, fmt.Errorf("%w: %s", jetstream.ErrStreamNotFound, stream)
		}
		return nil, false, fmt.Errorf("%s (%d)", resp.Error.Description, resp.Error.ErrCode)
	}
	if resp.Message == nil {
		return nil, false, errors.New("empty answer")
	}
	return resp.Message, true, nil
}

// Between calls fn with every event matching filter whose sequence is in
// [from, to], oldest first, read as Next reads (from the leader). Refused
// messages are skipped.
func (s *Store) Between(ctx context.Context, filter string, from, to uint64, fn func(domain.Event) error) error {
	for seq := max(from, 1); seq <= to; {
		e, ok, err := s.Next(ctx, filter, seq)
		if err != nil || !ok || e.Seq > to {
			return err
		}
		if _, refused := e.Data.(domain.Refused); !refused {
			if err := fn(e); err != nil {
				return err
			}
		}
		seq = e.Seq + 1
	}
	return nil
}
