package natsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kino-video/kino/eventstore/internal/diskspace"
)

// HealConfig tunes Embedded.Heal. validate fills the defaults.
type HealConfig struct {
	// Every is how often the server's health is read. Default 1 s.
	Every time.Duration
	// Reserve is the free space the service keeps on the store's disk for
	// its own writes (kino serve's --disk-reserve, past which uploads are
	// refused): Reserve bytes, or ReservePercent of the disk's size. A
	// restart never waits for more free space than this beyond what the
	// store itself needs (see restartFree). Zero: no reserve.
	Reserve        int64
	ReservePercent float64
	// Log gets one line per change: a fault found, a restart, a recovery.
	Log *slog.Logger
}

func (c *HealConfig) validate() {
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// errStoreWrite is what Health reports while a stream's store has failed
// a write: the server answers no append to it until it restarts.
var errStoreWrite = errors.New("the JetStream store failed a write (disk full?) and takes no more until the server restarts")

// errStoreLimit is what Health reports while the store is at the storage
// limit nats-server set itself when it started (kino sets none: 3/4 of the
// free space it found, plus what its streams held): it refuses appends
// past it however much space is freed, until it restarts and measures
// again. A server started on a nearly full disk meets it first.
var errStoreLimit = errors.New("the JetStream store is at the storage limit it set itself at start and takes no more until the server restarts")

// errJetStreamOff is what Health reports when the server has turned
// JetStream off (it does so on a file permission error).
var errJetStreamOff = errors.New("JetStream is disabled on the embedded server")

// Health is nil while the embedded server's streams take writes, and
// otherwise what is wrong (as found by Heal; nil when Heal is not running).
// The error may name files of the store: log it, do not show it to clients.
func (e *Embedded) Health() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.problem
}

// Heal watches the embedded server until ctx ends. nats-server stops
// acknowledging appends to a stream whose store failed a write (a full
// disk), for good: space freed later changes nothing until the server is
// restarted. Heal notices it (Health reports it) and, once the store's
// file system has room again (restartFree), restarts the server in this
// process on the same port and store. Clients reconnect by themselves;
// what was acknowledged before the fault is on disk and recovered.
func (e *Embedded) Heal(ctx context.Context, cfg HealConfig) error {
	cfg.validate()
	tick := time.NewTicker(cfg.Every)
	defer tick.Stop()
	var waiting bool // logged that the restart waits for space
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		problem, detail := check(e.server())
		e.mu.Lock()
		before := e.problem
		e.problem = problem
		e.mu.Unlock()
		switch {
		case problem == nil && before != nil:
			cfg.Log.Info("embedded NATS server takes writes again")
			waiting = false
		case problem != nil && before == nil:
			cfg.Log.Error("embedded NATS server has stopped taking writes", "err", detail)
		}
		if problem == nil {
			continue
		}
		if free, size, err := diskspace.Free(e.opts.StoreDir); err == nil {
			if need := restartFree(size, storeUsed(e.server()), cfg.reserve(size)); free < need {
				if !waiting {
					cfg.Log.Warn("embedded NATS server will restart once its store has room", "free_bytes", free, "needed_bytes", need, "disk_bytes", size)
					waiting = true
				}
				continue
			}
		}
		cfg.Log.Warn("restarting the embedded NATS server to resume writes", "store", filepath.Clean(e.opts.StoreDir))
		if err := e.restart(); err != nil {
			cfg.Log.Error("restart of the embedded NATS server failed; retrying", "err", err)
			continue
		}
		waiting = false
	}
}

// healHeadroom is the most free space a restart waits for beyond the
// store's own need: enough, on a large disk, that a disk still nearly full
// does not make the server restart over and over.
const healHeadroom = 64 << 20

// restartFree is the free space (bytes) the store's file system of size
// bytes must have before a server whose store failed a write is
// restarted, its file-store streams holding used bytes, with reserve bytes
// kept free by the service (0: none). It is the larger of two amounts.
//
// What the store needs. A restarted nats-server, its storage limit unset
// (kino sets none), takes as its limit 3/4 of the free space it finds plus
// 3/4 of what its streams hold already, and refuses every append past it
// (insufficient resources) until it restarts again: with less than a
// third of used free it takes no write at all. To take one file-store
// block more (server.FileStoreMaxBlkSize, 8 MiB: the block of a limits
// stream with no size limit, like kino's event stream; work queues and
// buckets use 4 MiB), 3/4·(free+used) ≥ used+block, so free ≥
// (used + 4·block)/3: about 10.7 MiB plus a third of used, which also
// leaves room on the disk for the block itself.
//
// What the disk should have. Restarting as soon as the store fits would,
// on a disk still being filled, stop and restart the server over and over;
// so a restart also waits for some headroom: 64 MiB, or an eighth of a
// smaller disk (64 MiB can never be free on a 64 MiB volume), and never
// more than the reserve, since past it the service counts the disk as
// having room again (uploads are taken, /readyz reports the disk ready).
func restartFree(size, used, reserve int64) int64 {
	const block = server.FileStoreMaxBlkSize
	need := (used + 4*block + 2) / 3 // rounded up
	headroom := min(healHeadroom, size/8, max(reserve, 0))
	return max(need, headroom)
}

// reserve is the reserve in bytes on a disk of size bytes.
func (c HealConfig) reserve(size int64) int64 {
	if c.ReservePercent > 0 {
		return int64(float64(size) * c.ReservePercent / 100)
	}
	return c.Reserve
}

// storeUsed is what the server's file-store streams hold (bytes), as its
// storage limit counts it; 0 when it cannot tell (JetStream off).
func storeUsed(srv *server.Server) int64 {
	info, err := srv.Jsz(nil)
	if err != nil || info == nil {
		return 0
	}
	return int64(info.Store)
}

// check reads the server's own health: the fault, if any, and its detail
// for the log.
func check(srv *server.Server) (problem error, detail string) {
	if !srv.JetStreamEnabled() {
		return errJetStreamOff, errJetStreamOff.Error()
	}
	if info, err := srv.Jsz(nil); err == nil && info != nil && atLimit(info.Store, info.Config.MaxStore) {
		return errStoreLimit, fmt.Sprintf("the JetStream store holds %d bytes of the %d it allowed itself at its start", info.Store, info.Config.MaxStore)
	}
	h := srv.Healthz(&server.HealthzOptions{})
	if h == nil || h.Error == "" || !strings.Contains(h.Error, "write error") {
		// Other states (a cluster electing its leader) pass by themselves.
		return nil, ""
	}
	return errStoreWrite, h.Error
}

// limitSlack is how close to its storage limit a store counts as full: an
// append larger than what is left is refused.
const limitSlack = 1 << 20

// atLimit reports whether a file store holding used bytes is within
// limitSlack of its limit max (0 or less: none).
func atLimit(used uint64, max int64) bool {
	return max > 0 && used+limitSlack > uint64(max)
}

// restart shuts the server down and starts it again with the same options.
func (e *Embedded) restart() error {
	old := e.server()
	old.Shutdown()
	old.WaitForShutdown()
	srv, err := e.start()
	if err != nil {
		return fmt.Errorf("restart nats: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed { // Shutdown came while it started
		srv.Shutdown()
		return errors.New("restart nats: shut down meanwhile")
	}
	e.srv = srv
	return nil
}
