package kv

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RateBucket is the KV bucket in which the API nodes share their rate
// limits: one entry per limited key (an account, a client address), holding
// the part of the key's budget each node has taken.
const RateBucket = natsconn.RateBucket

// RateSkew is how much later than its holder another node lets a holding
// lapse: the nodes' clocks must agree within it.
const RateSkew = 5 * time.Second

// RateHolding is one node's part of a key's budget: it may allow up to
// Share requests in any window while its lease runs (Until, Unix ns), and
// must hold it until its last allowed request has left the window. Used and
// Oldest (Unix ns) say what it had counted at its last update, for the
// others' X-RateLimit-* headers.
type RateHolding struct {
	Share  int   `json:"s"`
	Used   int   `json:"u"`
	Oldest int64 `json:"o,omitempty"`
	Until  int64 `json:"t"`
}

// RateLimits is the shared ledger of the rate limits (RateBucket).
type RateLimits struct {
	conn *natsconn.Conn
	kv   jetstream.KeyValue
}

// OpenRateLimits opens the rate-limit bucket, creating it if needed.
func OpenRateLimits(ctx context.Context, s *eventstore.Store) (*RateLimits, error) {
	c := s.NATS()
	var kv jetstream.KeyValue
	err := c.UntilReady(ctx, func() (err error) {
		kv, err = c.Bucket(ctx, c.Manage, natsconn.RateBucketConfig(c.Replicas))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open rate limits: %w", err)
	}
	return &RateLimits{conn: c, kv: kv}, nil
}

// Connected is false while this process has no connection to NATS.
func (l *RateLimits) Connected() bool { return l.conn.NC.IsConnected() }

// ErrRateUnavailable means the shared ledger cannot be reached now.
var ErrRateUnavailable = errors.New("rate-limit ledger unreachable")

// UpdateRate reads the holdings of key, passes decide the live holdings of
// the other nodes (those whose lease has not lapsed at now, give or take
// RateSkew), and stores node's answer, retrying when another node wrote in
// between (compare-and-swap on the entry's revision) until ctx ends. It
// fails at once, with ErrRateUnavailable, while the connection to NATS is
// down or the event stream is known to have no quorum (the bucket, on the
// same nodes, has no leader either).
func (l *RateLimits) UpdateRate(ctx context.Context, key, node string, now time.Time, decide func(others []RateHolding) RateHolding) error {
	if l.conn.NC.Status() != nats.CONNECTED || l.conn.NoQuorum() {
		return fmt.Errorf("update rate %s: %w", key, ErrRateUnavailable)
	}
	k := base64.RawURLEncoding.EncodeToString([]byte(key))
	for ctx.Err() == nil {
		holdings := map[string]RateHolding{}
		var rev uint64
		e, err := l.kv.Get(ctx, k)
		switch {
		case err == nil:
			rev = e.Revision()
			if len(e.Value()) > 0 {
				if err := json.Unmarshal(e.Value(), &holdings); err != nil {
					return fmt.Errorf("update rate %s: %w", key, err)
				}
			}
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return fmt.Errorf("update rate %s: %w: %w", key, ErrRateUnavailable, err)
		}
		others := make([]RateHolding, 0, len(holdings))
		for n, h := range holdings {
			if n == node {
				continue
			}
			if h.Until+int64(RateSkew) < now.UnixNano() {
				delete(holdings, n) // lapsed: its holder died or left
				continue
			}
			others = append(others, h)
		}
		mine := decide(others)
		if mine.Share <= 0 && mine.Used <= 0 {
			delete(holdings, node)
		} else {
			holdings[node] = mine
		}
		body, err := json.Marshal(holdings)
		if err != nil {
			return fmt.Errorf("update rate %s: %w", key, err)
		}
		if rev == 0 {
			_, err = l.kv.Create(ctx, k, body)
		} else {
			_, err = l.kv.Update(ctx, k, body, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !natsconn.WrongLastSequence(err) {
			return fmt.Errorf("update rate %s: %w: %w", key, ErrRateUnavailable, err)
		}
	}
	return fmt.Errorf("update rate %s: %w: %w", key, ErrRateUnavailable, ctx.Err())
}
