package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// On a cluster, an append succeeds only while a majority of the event
// stream's replicas answer its leader. A node that lost the others does
// not learn it from its connection (still up) nor at once from its
// appends: each waits for an acknowledgement that never comes. And the
// stream's info, which a leaderless replica answers with its own state,
// is no proof of health either. So kino serve on a cluster reads the
// stream's info every quorumEvery and counts the replicas its leader has
// heard from lately: while fewer than a majority answer (or no leader
// answers at all), writes are refused at once and Health says why, so
// /readyz answers 503 for as long as appends cannot succeed.

// quorumEvery is how often the quorum is checked; quorumTimeout bounds one
// check. peerSilence is how long a leader may not have heard from a
// replica before it is counted as gone: a live replica answers the
// leader's heartbeat every second, and NATS itself suspects a silent
// leader after 4 s (its shortest election timeout).
const (
	quorumEvery   = time.Second
	quorumTimeout = 2 * time.Second
	peerSilence   = 4 * time.Second
)

// errNoQuorum is the write failure while the event stream's leader does
// not have a majority of its replicas.
var errNoQuorum = errors.New("the event stream has no quorum: too few of its replicas answer")

// quorumFault is nil when the stream info says appends can succeed: a
// leader that has heard from a majority of the replicas lately. A single
// server's stream is led by that server, always.
func quorumFault(info *jetstream.StreamInfo) error {
	c := info.Cluster
	if c == nil || info.Config.Replicas <= 1 {
		return nil
	}
	if c.Leader == "" {
		return fmt.Errorf("%w (no leader)", errNoQuorum)
	}
	live := 1 // the leader answered
	for _, p := range c.Replicas {
		if !p.Offline && p.Active <= peerSilence {
			live++
		}
	}
	if need := info.Config.Replicas/2 + 1; live < need {
		return fmt.Errorf("%w (%d of %d, %d needed)", errNoQuorum, live, info.Config.Replicas, need)
	}
	return nil
}

// watchQuorum checks the event stream's quorum every quorumEvery until ctx
// ends (see above). A check that gets no answer counts only when the next
// one gets none either, so one slow answer on a busy machine does not
// refuse writes; an answer that shows no quorum counts at once.
func (s *Store) watchQuorum(ctx context.Context) {
	t := time.NewTicker(quorumEvery)
	defer t.Stop()
	var unanswered int
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.nc.IsConnected() {
			continue // the connection's own state says it
		}
		cctx, cancel := context.WithTimeout(ctx, quorumTimeout)
		info, err := s.stream.Info(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if unanswered++; unanswered >= 2 {
				s.health.quorum(fmt.Errorf("%w (no answer from the stream's leader: %w)", errNoQuorum, err))
			}
			continue
		}
		unanswered = 0
		s.health.quorum(quorumFault(info))
	}
}
