package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/eventstore/internal/natsconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// WorkersBucket holds one heartbeat per running kino serve or kino worker
// process, rewritten every HeartbeatEvery: an entry lapses WorkerTTL after
// the last one, so a process that died drops out on its own. It is what
// GET /v1/admin/health lists as the workers seen.
const WorkersBucket = "KINO_WORKERS"

// HeartbeatEvery is how often a process rewrites its heartbeat; WorkerTTL
// is how long an entry outlives its last write.
const (
	HeartbeatEvery = 10 * time.Second
	WorkerTTL      = 30 * time.Second
)

// WorkerInfo is one process's heartbeat.
type WorkerInfo struct {
	Name     string    `json:"name"` // host:pid, as TranscodeStarted names its worker
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Role     string    `json:"role"` // serve or worker
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"lastSeen"`
	Running  int       `json:"jobsRunning"` // transcodes running in the process
}

func workersBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      WorkersBucket,
		Description: "kino: heartbeats of the running kino processes",
		TTL:         WorkerTTL,
		Storage:     natsconn.VolatileStorage(replicas),
		Replicas:    replicas,
	}
}

// workersKV opens the bucket for a heartbeat (kino serve creates it when
// missing), retried while a forming cluster elects its leader.
func (s *Store) workersKV(ctx context.Context) (kv jetstream.KeyValue, err error) {
	err = s.untilReady(ctx, func() (err error) {
		kv, err = s.bucket(ctx, s.cfg.Manage, workersBucketConfig(s.cfg.Replicas))
		return err
	})
	return kv, err
}

// Heartbeat writes this process's heartbeat (role: serve or worker) now and
// every HeartbeatEvery until ctx ends, then removes it. running, when not
// nil, tells how many transcodes run. A failed write is retried at the
// next beat: the heartbeat is for operators, never a reason to stop.
func (s *Store) Heartbeat(ctx context.Context, role string, running func() int) error {
	host, _ := os.Hostname()
	pid := os.Getpid()
	info := WorkerInfo{Name: host + ":" + strconv.Itoa(pid), Host: host, PID: pid, Role: role, Started: s.Now()}
	key := workerKey(host, pid, role)
	var kv jetstream.KeyValue
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		if kv == nil {
			var err error
			if kv, err = s.workersKV(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Log.Debug("heartbeat", "err", err)
			}
		}
		if kv != nil {
			info.LastSeen = s.Now()
			if running != nil {
				info.Running = running()
			}
			raw, _ := json.Marshal(info)
			if _, err := kv.Put(ctx, key, raw); err != nil && ctx.Err() == nil {
				s.cfg.Log.Debug("heartbeat", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			if kv != nil {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_ = kv.Delete(dctx, key)
				cancel()
			}
			return nil
		case <-t.C:
		}
	}
}

// workerKey is a valid KV key naming one process.
func workerKey(host string, pid int, role string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, host)
	if clean == "" {
		clean = "unknown"
	}
	return role + "." + clean + "." + strconv.Itoa(pid)
}

// Workers lists the processes whose heartbeat has not lapsed, by name.
func (s *Store) Workers(ctx context.Context) ([]WorkerInfo, error) {
	out := []WorkerInfo{}
	kv, err := s.bucket(ctx, s.cfg.Manage, workersBucketConfig(s.cfg.Replicas)) // a health request does not wait for a leader
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("workers: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	for k := range lister.Keys() {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", k, err)
		}
		var w WorkerInfo
		if json.Unmarshal(e.Value(), &w) == nil {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return strings.Compare(a.Name+a.Role, b.Name+b.Role) })
	return out, nil
}

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
