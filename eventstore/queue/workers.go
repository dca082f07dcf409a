package queue

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
	"github.com/nats-io/nats.go/jetstream"
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

// workersKV opens the bucket for a heartbeat (kino serve creates it when
// missing), retried while a forming cluster elects its leader.
func (s *Queues) workersKV(ctx context.Context) (kv jetstream.KeyValue, err error) {
	err = s.c.UntilReady(ctx, func() (err error) {
		kv, err = s.c.Bucket(ctx, s.c.Manage, natsconn.WorkersBucketConfig(s.c.Replicas))
		return err
	})
	return kv, err
}

// Heartbeat writes this process's heartbeat (role: serve or worker) now and
// every HeartbeatEvery until ctx ends, then removes it. running, when not
// nil, tells how many transcodes run. A failed write is retried at the
// next beat: the heartbeat is for operators, never a reason to stop.
func (s *Queues) Heartbeat(ctx context.Context, role string, running func() int) error {
	host, _ := os.Hostname()
	pid := os.Getpid()
	info := WorkerInfo{Name: host + ":" + strconv.Itoa(pid), Host: host, PID: pid, Role: role, Started: s.c.Now()}
	key := workerKey(host, pid, role)
	var kv jetstream.KeyValue
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		if kv == nil {
			var err error
			if kv, err = s.workersKV(ctx); err != nil && ctx.Err() == nil {
				s.c.Log.Debug("heartbeat", "err", err)
			}
		}
		if kv != nil {
			info.LastSeen = s.c.Now()
			if running != nil {
				info.Running = running()
			}
			raw, _ := json.Marshal(info)
			if _, err := kv.Put(ctx, key, raw); err != nil && ctx.Err() == nil {
				s.c.Log.Debug("heartbeat", "err", err)
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
func (s *Queues) Workers(ctx context.Context) ([]WorkerInfo, error) {
	out := []WorkerInfo{}
	kv, err := s.c.Bucket(ctx, s.c.Manage, natsconn.WorkersBucketConfig(s.c.Replicas)) // a health request does not wait for a leader
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
