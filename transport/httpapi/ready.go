package httpapi

import (
	"context"
	"fmt"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/probes"
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

// readyChecks are /readyz's checks (package probes).
func (s *Server) readyChecks() []probes.Check {
	return []probes.Check{
		{Name: "nats", Run: func(context.Context) (string, error) {
			if err := s.cfg.Store.Healthy(); err != nil {
				return "NATS is unreachable", err
			}
			return "", nil
		}},
		{Name: "jetstream", Run: func(context.Context) (string, error) {
			if err := s.writeFault(); err != nil {
				return "the event store is not accepting writes", err
			}
			return "", nil
		}},
		{Name: "read_models", Run: func(ctx context.Context) (string, error) {
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
		{Name: "media", Run: func(ctx context.Context) (string, error) {
			r, ok := any(s.cfg.Media).(Readier)
			if !ok {
				return "", nil
			}
			if err := r.Ready(ctx); err != nil {
				return "the media store is not reachable or not writable", err
			}
			return "", nil
		}},
		{Name: "disk", Run: func(context.Context) (string, error) {
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

// live is /healthz's question: the process is connected to NATS, its
// event store takes writes (or its embedded server is healing itself) and
// its projector runs.
func (s *Server) live() error {
	err := s.cfg.Store.Healthy()
	if err == nil {
		err = s.writeFault()
	}
	if err == nil {
		err = s.cfg.Projector.Err()
	}
	return err
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
