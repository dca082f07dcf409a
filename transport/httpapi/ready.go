package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/media"
)

// Readier is a part that can tell whether it can serve now: a media
// backend (the directory exists and takes files; the object store
// answers). Media backends implement it; /readyz asks.
type Readier interface {
	Ready(ctx context.Context) error
}

// ServerHealth is the embedded NATS server's own view of its streams: nil
// while they take writes (natsserver.Embedded). Nil in Config when NATS is
// not embedded.
type ServerHealth interface {
	Health() error
}

// readyTimeout bounds one /readyz (and /healthz) round.
const readyTimeout = 2 * time.Second

// check is one readiness check: its name in /readyz, and what a failure
// tells an operator (fixed text: details, which may name files, go to the
// log).
type check struct {
	name string
	run  func(ctx context.Context) (problem string, detail error)
}

func (s *Server) readyChecks() []check {
	return []check{
		{"nats", func(context.Context) (string, error) {
			if err := s.cfg.Store.Healthy(); err != nil {
				return "NATS is unreachable", err
			}
			return "", nil
		}},
		{"jetstream", func(context.Context) (string, error) {
			if err := s.writeFault(); err != nil {
				return "the event store is not accepting writes", err
			}
			return "", nil
		}},
		{"read_models", func(ctx context.Context) (string, error) {
			if err := s.cfg.Projector.Err(); err != nil {
				return "the projector has stopped", err
			}
			last, err := s.cfg.Store.LastSeq(ctx)
			if err != nil {
				return "the stream's last sequence is unknown", err
			}
			if applied := s.cfg.Projector.Applied(); applied+s.cfg.MaxReadLag < last {
				return fmt.Sprintf("the read models are %d events behind the stream (at most %d allowed)", last-applied, s.cfg.MaxReadLag), nil
			}
			return "", nil
		}},
		{"media", func(ctx context.Context) (string, error) {
			r, ok := any(s.cfg.Media).(Readier)
			if !ok {
				return "", nil
			}
			if err := r.Ready(ctx); err != nil {
				return "the media store is not reachable or not writable", err
			}
			return "", nil
		}},
		{"disk", func(context.Context) (string, error) {
			room, err := s.disk.Room()
			if err != nil {
				return "free disk space is unknown", err
			}
			if room < 0 {
				return "free disk space is below the reserve", nil
			}
			return "", nil
		}},
	}
}

// readyz answers whether this node can serve requests: 200
// {"status":"ready","checks":{...}} or 503 with the failing checks named,
// so a load balancer can take it out. /healthz stays liveness.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := map[string]string{}
	var failing []string
	var details []any
	for _, c := range s.readyChecks() {
		problem, detail := c.run(ctx)
		if problem == "" {
			checks[c.name] = "ok"
			continue
		}
		checks[c.name] = problem
		failing = append(failing, c.name)
		if detail != nil {
			details = append(details, c.name, detail.Error())
		}
	}
	s.readiness.report(s.cfg.Log, failing, details)
	if len(failing) > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(respond.UnavailableRetry))
		respond.JSON(w, http.StatusServiceUnavailable, struct {
			Status  string            `json:"status"`
			Failing []string          `json:"failing"`
			Checks  map[string]string `json:"checks"`
		}{"unavailable", failing, checks})
		return nil
	}
	respond.JSON(w, http.StatusOK, struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}{"ready", checks})
	return nil
}

// healthz is liveness: the process answers, is connected to NATS, its
// event store takes writes (or its embedded server is healing itself) and
// its projector runs.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	err := s.cfg.Store.Healthy()
	if err == nil {
		err = s.writeFault()
	}
	if err == nil {
		err = s.cfg.Projector.Err()
	}
	var failing []string
	if err != nil {
		failing = []string{"liveness"}
	}
	s.health.report(s.cfg.Log, failing, []any{"err", err})
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(respond.UnavailableRetry))
		respond.JSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return nil
	}
	respond.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// writable is nil when the event store may be written to now: connected,
// appends acknowledged (or due for a probe), the embedded server's streams
// healthy.
func (s *Server) writable() error {
	if err := s.cfg.Store.Writable(); err != nil {
		return err
	}
	return s.serverFault()
}

// writableNow is writable for a request that appends nothing itself but
// whose work is lost unless a later append succeeds: a tus creation or
// PATCH (the bytes wait for the last one's UploadAccepted), a direct
// upload URL. While appends are known to fail, writable lets a request
// through once per probe interval, for its append to find out whether they
// work again; a request without an append would find out nothing and go
// on. Here the store's own probe (Health, which asks for the stream's
// info, answered only by a leader) finds out instead, at most once per
// probe interval; until appends work again the request is refused.
func (s *Server) writableNow() error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := s.cfg.Store.Health().Writes; err != nil {
		return errNotAccepting(err)
	}
	return nil
}

// errNotAccepting is the refusal of a write while the event store does
// not take writes.
func errNotAccepting(cause error) error {
	return domain.Wrap("append", domain.Unavailable, cause, "The event store is not accepting writes; retry in a few seconds")
}

// writeFault is the event store's state for health and readiness: nil
// unless appends are known to fail or the embedded server reports a fault.
func (s *Server) writeFault() error {
	if err := s.cfg.Store.Health().Writes; err != nil {
		return err
	}
	return s.serverFault()
}

func (s *Server) serverFault() error {
	if s.cfg.EventServer != nil {
		if err := s.cfg.EventServer.Health(); err != nil {
			return errNotAccepting(err)
		}
	}
	return nil
}

// transitions logs a probe's outcome when it changes, not on every probe:
// one line when checks start failing (or the failing set changes), one
// when all pass again.
type transitions struct {
	what    string // "ready" or "healthy", for the log
	mu      sync.Mutex
	failing []string
}

func (t *transitions) report(log interface {
	Warn(string, ...any)
	Info(string, ...any)
}, failing []string, details []any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Equal(t.failing, failing) {
		return
	}
	t.failing = failing
	if len(failing) == 0 {
		log.Info("node " + t.what + " again")
		return
	}
	log.Warn("node not "+t.what, append([]any{"failing", strings.Join(failing, ",")}, details...)...)
}

// errInsufficientStorage is the 507 of an upload that does not fit.
func errInsufficientStorage(cause error) error {
	return domain.Wrap("upload video", domain.InsufficientStorage, cause,
		"the server is short of disk space and cannot store this upload now; try again later")
}

// storeError is a failure to write an upload to the server's own disk
// (the server's fault, unlike an interrupted body).
type storeError struct{ err error }

func (e *storeError) Error() string { return "store upload: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// wrapStoreError marks a write error of an upload's file as the server's.
func wrapStoreError(err error) error { return &storeError{err} }

var (
	_ Readier = (*media.Dir)(nil)
	_ Readier = (*media.Bucket)(nil)
)
