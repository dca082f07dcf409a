package eventstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// HealConfig tunes Embedded.Heal. validate fills the defaults.
type HealConfig struct {
	// Every is how often the server's health is read. Default 1 s.
	Every time.Duration
	// MinFree is the free space (bytes) the store's file system must have
	// again before a server whose store failed a write is restarted, so a
	// full disk does not make it restart over and over. Default 64 MiB.
	MinFree int64
	// Log gets one line per change: a fault found, a restart, a recovery.
	Log *slog.Logger
}

func (c *HealConfig) validate() {
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.MinFree <= 0 {
		c.MinFree = 64 << 20
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// errStoreWrite is what Health reports while a stream's store has failed
// a write: the server answers no append to it until it restarts.
var errStoreWrite = errors.New("the JetStream store failed a write (disk full?) and takes no more until the server restarts")

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
// file system has MinFree bytes free, restarts the server in this process
// on the same port and store. Clients reconnect by themselves; what was
// acknowledged before the fault is on disk and recovered.
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
		free, err := diskFree(e.opts.StoreDir)
		if err == nil && free < cfg.MinFree {
			if !waiting {
				cfg.Log.Warn("embedded NATS server will restart once its store has room", "free_bytes", free, "needed_bytes", cfg.MinFree)
				waiting = true
			}
			continue
		}
		cfg.Log.Warn("restarting the embedded NATS server to resume writes", "store", filepath.Clean(e.opts.StoreDir))
		if err := e.restart(); err != nil {
			cfg.Log.Error("restart of the embedded NATS server failed; retrying", "err", err)
			continue
		}
		waiting = false
	}
}

// check reads the server's own health: the fault, if any, and its detail
// for the log.
func check(srv *server.Server) (problem error, detail string) {
	if !srv.JetStreamEnabled() {
		return errJetStreamOff, errJetStreamOff.Error()
	}
	h := srv.Healthz(&server.HealthzOptions{})
	if h == nil || h.Error == "" || !strings.Contains(h.Error, "write error") {
		// Other states (a cluster electing its leader) pass by themselves.
		return nil, ""
	}
	return errStoreWrite, h.Error
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
