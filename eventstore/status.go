package eventstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// StreamStatus is the event stream as JetStream reports it.
type StreamStatus struct {
	Name      string   `json:"name"`
	Messages  uint64   `json:"messages"`
	Bytes     uint64   `json:"bytes"`
	FirstSeq  uint64   `json:"firstSeq"`
	LastSeq   uint64   `json:"lastSeq"`
	Consumers int      `json:"consumers"`
	Replicas  int      `json:"replicas"`
	Leader    string   `json:"leader"`  // the server leading it (alone: that server)
	Peers     []string `json:"peers"`   // servers holding a replica, besides the leader
	Lagging   []string `json:"lagging"` // replicas that are behind or offline
	Storage   string   `json:"storage"` // file or memory
	Cluster   string   `json:"cluster"` // "" outside a cluster
}

// Status reports the event stream's state, replicas and leader.
func (s *Store) Status(ctx context.Context) (StreamStatus, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return StreamStatus{}, fmt.Errorf("stream info: %w", err)
	}
	st := StreamStatus{Name: info.Config.Name, Messages: info.State.Msgs, Bytes: info.State.Bytes,
		FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, Consumers: info.State.Consumers,
		Replicas: info.Config.Replicas, Storage: info.Config.Storage.String(), Peers: []string{}, Lagging: []string{}}
	if info.Cluster != nil {
		st.Leader, st.Cluster = info.Cluster.Leader, info.Cluster.Name
		for _, p := range info.Cluster.Replicas {
			st.Peers = append(st.Peers, p.Name)
			if !p.Current || p.Offline {
				st.Lagging = append(st.Lagging, p.Name)
			}
		}
	}
	return st, nil
}

// ConnStatus is this process's connection to NATS.
type ConnStatus struct {
	Connected  bool       `json:"connected"`
	Status     string     `json:"status"`
	Server     string     `json:"server"` // the server's name
	ServerID   string     `json:"serverId"`
	URL        string     `json:"url"` // without credentials
	Reconnects uint64     `json:"reconnects"`
	RTTMs      int64      `json:"rttMs"`
	DownSince  *time.Time `json:"downSince"` // start of the current outage
}

// Conn reports the NATS connection, with a round trip to the server
// measured now (bounded by ctx) when connected.
func (s *Store) Conn(ctx context.Context) ConnStatus {
	st := s.nc.Status()
	c := ConnStatus{Connected: st == nats.CONNECTED, Status: strings.ToLower(st.String()),
		Server: s.nc.ConnectedServerName(), ServerID: s.nc.ConnectedServerId(),
		URL: RedactURL(s.nc.ConnectedUrlRedacted()), Reconnects: s.nc.Stats().Reconnects}
	if c.Connected {
		start := time.Now()
		if err := s.nc.FlushWithContext(ctx); err == nil {
			c.RTTMs = time.Since(start).Milliseconds()
		}
	}
	if h := s.health.snapshot(); !h.Connected && !h.Since.IsZero() {
		since := h.Since
		c.DownSince = &since
	}
	return c
}
