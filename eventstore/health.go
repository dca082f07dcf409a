package eventstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// ErrUnavailable is the cause of the domain Unavailable errors the store
// answers at once, without waiting, while it cannot serve: the connection
// to NATS is down, or the streams have stopped acknowledging writes.
var ErrUnavailable = errors.New("event store unavailable")

// ErrNotStored joins ErrUnavailable when the operation was refused before
// anything was sent: an append refused so certainly did not land (one that
// went unanswered may have).
var ErrNotStored = errors.New("nothing was stored")

// errDisconnected cancels operations in flight when the connection drops.
var errDisconnected = errors.New("connection to NATS lost")

// Health is what the store knows of its own state, as plain values.
type Health struct {
	Connected bool
	Since     time.Time // start of the current outage; zero while connected
	// Writes is non-nil while appends are known to fail: an append went
	// unacknowledged (a server whose store hit a full disk stops answering)
	// or was refused for want of storage. It clears when an append succeeds
	// or the connection is made again.
	Writes error
}

// Health reports the store's connection and write state.
//
// Writes that failed for want of a stream leader (a cluster that lost its
// quorum) clear without a client's append: at most every probe interval,
// Health asks for the stream's info, which only a leader answers. A node a
// load balancer dropped on /readyz gets no appends to probe with.
func (s *Store) Health() Health {
	if s.health.leaderProbeDue() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := s.stream.Info(ctx)
		cancel()
		if err == nil && quorumFault(info) == nil { // a leaderless replica answers too
			s.health.wrote(nil)
		}
	}
	return s.health.snapshot()
}

// Writable is nil when an append may be tried now (connected, and writes
// not known to fail, or due for a probe), and otherwise the Unavailable
// error an append would return at once.
func (s *Store) Writable() error {
	h := s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.conn.Err() != nil:
		return refusal("append", errDisconnected)
	case h.quorumErr != nil:
		return refusal("append", h.quorumErr)
	case h.writeErr != nil && time.Now().Before(h.nextProbe):
		return refusal("append", h.writeErr)
	}
	return nil
}

// refusal is unavailable for an operation that sent nothing (a read, or a
// write refused before it was sent).
func refusal(op string, cause error) error {
	return unavailable(op, errors.Join(ErrNotStored, cause))
}

func unavailable(op string, cause error) error {
	msg := "The event store is unreachable; retry in a few seconds"
	if !errors.Is(cause, errDisconnected) {
		msg = "The event store is not accepting writes; retry in a few seconds"
	}
	return domain.Wrap(op, domain.Unavailable, errors.Join(ErrUnavailable, cause), msg)
}

// health tracks the connection and the writes. Its log lines are one per
// change of state (one per outage), never one per request or probe.
type health struct {
	log        *slog.Logger
	probeEvery time.Duration

	mu          sync.Mutex
	conn        context.Context // cancelled while disconnected
	cancelConn  context.CancelCauseFunc
	downSince   time.Time
	closing     bool
	writeErr    error
	writeSince  time.Time
	nextProbe   time.Time
	quorumErr   error // set by watchQuorum while the stream has no quorum
	quorumSince time.Time
	reconnect   chan struct{} // closed at the next reconnection
}

func newHealth(log *slog.Logger, probeEvery time.Duration) *health {
	h := &health{log: log, probeEvery: probeEvery, reconnect: make(chan struct{})}
	h.conn, h.cancelConn = context.WithCancelCause(context.Background())
	return h
}

// leaderProbeDue is true, once per probe interval, while appends fail for
// want of an answer from the stream (no leader, or no ack in time), not
// for a storage refusal. (An embedded server whose store failed a write
// still answers the info; its own health keeps /readyz failing then.)
func (h *health) leaderProbeDue() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.writeErr == nil || natsconn.StorageRefusal(h.writeErr) || h.conn.Err() != nil {
		return false
	}
	if now := time.Now(); !now.Before(h.nextProbe) {
		h.nextProbe = now.Add(h.probeEvery)
		return true
	}
	return false
}

func (h *health) snapshot() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	writes := h.writeErr
	if h.quorumErr != nil {
		writes = h.quorumErr
	}
	return Health{Connected: h.conn.Err() == nil, Since: h.downSince, Writes: writes}
}

// disconnected is the connection's disconnect handler.
func (h *health) disconnected(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn.Err() != nil {
		return
	}
	h.cancelConn(errDisconnected)
	h.downSince = time.Now()
	if !h.closing {
		h.log.Warn("event store disconnected from NATS; writes are refused until it is back", "err", err)
	}
}

// reconnected is the connection's reconnect handler. A new connection may
// reach a restarted server, so a write failure is forgotten: the next
// append finds out.
func (h *health) reconnected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn.Err() == nil {
		return
	}
	h.conn, h.cancelConn = context.WithCancelCause(context.Background())
	h.log.Info("event store reconnected to NATS", "outage", time.Since(h.downSince).Round(time.Millisecond))
	h.downSince = time.Time{}
	h.writeErr = nil
	close(h.reconnect)
	h.reconnect = make(chan struct{})
}

// nextReconnect is closed when the connection is made again after it
// dropped: the server may be another, or the same one restarted.
func (h *health) nextReconnect() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reconnect
}

func (h *health) close() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
}

type failFastKey struct{}

// FailFast marks ctx so that the store's operations under it fail at once
// with a domain Unavailable (wrapping ErrUnavailable) while the connection
// to NATS is down, and are cancelled when it drops, instead of waiting for
// it to come back: what a request with a client waiting wants. Without it
// (workers, the CLI) an operation waits for the connection, as long as its
// context allows.
func FailFast(ctx context.Context) context.Context {
	return context.WithValue(ctx, failFastKey{}, true)
}

func failFast(ctx context.Context) bool {
	v, _ := ctx.Value(failFastKey{}).(bool)
	return v
}

// connCtx is the current connection's context: cancelled when it drops.
func (h *health) connCtx() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn
}

// op derives a context for one operation on NATS: under FailFast, one that
// is cancelled when the connection drops, or an error at once while it is
// down; otherwise ctx itself.
func (h *health) op(ctx context.Context, name string) (context.Context, context.CancelFunc, error) {
	if !failFast(ctx) {
		return ctx, func() {}, nil
	}
	conn := h.connCtx()
	if conn.Err() != nil {
		return ctx, func() {}, refusal(name, errDisconnected)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(conn, func() { cancel(errDisconnected) })
	return ctx, func() { stop(); cancel(nil) }, nil
}

// lost reports whether a read run under ctx (from op) failed because the
// connection dropped, and if so the error to return.
func lost(ctx context.Context, name string) error {
	if errors.Is(context.Cause(ctx), errDisconnected) {
		return refusal(name, errDisconnected)
	}
	return nil
}

// admitWrite lets an append go ahead unless writes are failing; then only
// one append per probe interval goes through, to find out whether they
// work again, and the others are refused at once.
func (h *health) admitWrite(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.quorumErr != nil {
		return refusal(name, h.quorumErr) // watchQuorum finds out when it is back
	}
	if h.writeErr == nil {
		return nil
	}
	if now := time.Now(); !now.Before(h.nextProbe) {
		h.nextProbe = now.Add(h.probeEvery)
		return nil
	}
	return refusal(name, h.writeErr)
}

// wrote records the outcome of an append: nil clears a write failure,
// errWriteFault sets one.
func (h *health) wrote(fault error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case fault == nil && h.writeErr != nil:
		h.log.Info("event store accepts writes again", "outage", time.Since(h.writeSince).Round(time.Millisecond))
		h.writeErr = nil
	case fault != nil && h.writeErr == nil:
		h.log.Error("event store is not accepting writes; appends are refused until one succeeds", "err", fault)
		h.writeErr, h.writeSince = fault, time.Now()
		h.nextProbe = h.writeSince.Add(h.probeEvery)
	}
}

// quorum records what watchQuorum found: nil when the event stream has
// a quorum, else why not. One log line per change.
func (h *health) quorum(fault error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case fault == nil && h.quorumErr != nil:
		h.log.Info("event stream has its quorum again; writes are accepted", "outage", time.Since(h.quorumSince).Round(time.Millisecond))
	case fault != nil && h.quorumErr == nil:
		h.log.Error("event stream has lost its quorum; writes are refused until it is back", "err", fault)
		h.quorumSince = time.Now()
	}
	h.quorumErr = fault
}

// noQuorum reports whether watchQuorum last found no quorum.
func (h *health) noQuorum() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.quorumErr != nil
}

// errNoAck is the write failure of an append the server never answered.
var errNoAck = errors.New("append not acknowledged in time")

// IsUnavailable reports whether err says NATS (the event store, or the
// object store on it) could not be reached or did not answer in time: an
// outage of the infrastructure, not a fault of what was asked.
func IsUnavailable(err error) bool {
	// A JetStream request that gets no answer ends with its own default
	// timeout: context.DeadlineExceeded although the caller set none.
	return errors.Is(err, ErrUnavailable) || transient(err) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrAsyncPublishTimeout) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionDraining) || errors.Is(err, jetstream.ErrNoHeartbeat)
}
