package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/probes"
)

// checkAdminToken checks the request's Bearer value against kino's
// --admin-token, in constant time.
func (s *Server) checkAdminToken(r *http.Request) error {
	got, want := sha256.Sum256([]byte(bearer(r))), sha256.Sum256([]byte(s.cfg.Admin.Token))
	switch {
	case bearer(r) == "":
		return errMissingKey()
	case s.cfg.Admin.Token == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1:
		return domain.E("admin", domain.BadCredentials, "The admin token is invalid")
	}
	return nil
}

// adminHost is what the operator's endpoints (package admin) use of the
// server.
type adminHost struct{ s *Server }

func (h adminHost) Decode(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSON(w, r, v)
}
func (h adminHost) Logger(r *http.Request) *slog.Logger { return logger(r, h.s.cfg.Log) }
func (h adminHost) Settle(r *http.Request, account string, seq uint64) {
	h.s.settleFor(r, account, seq)
}
func (h adminHost) WriteFault() error { return h.s.writeFault() }

func (h adminHost) Checks() []probes.Check { return h.s.readyChecks() }

func (h adminHost) KeyLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error) {
	if h.s.cfg.Users == nil {
		return nil, nil
	}
	return h.s.cfg.Users.KeyLastUsed(ctx, keyIDs)
}

// webhookHost is what the webhook endpoints (package webhooks) use of the
// server.
type webhookHost struct{ s *Server }

func (h webhookHost) Decode(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSON(w, r, v)
}
func (h webhookHost) Account(r *http.Request) string      { return callerOf(r).Account }
func (h webhookHost) Wrote(r *http.Request, seq uint64)   { h.s.wrote(r, seq) }
func (h webhookHost) Logger(r *http.Request) *slog.Logger { return logger(r, h.s.cfg.Log) }
func (h webhookHost) IntParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	return atoiParam(r, name, def, lo, hi)
}

// captionHost is what the caption endpoints (package captions) use of the
// server.
type captionHost struct{ s *Server }

func (h captionHost) Video(r *http.Request) (projections.Video, error) {
	v, err := h.s.videoVar(r)
	if err == nil && v.Account != callerOf(r).Account {
		return projections.Video{}, errNotFound("video")
	}
	return v, err
}
func (h captionHost) Execute(r *http.Request, id string, cmd any) error {
	res, err := execute[domain.Video](r, h.s.cfg.Store, videoStream(id), cmd)
	if err == nil {
		h.s.settle(r, res.LastSeq())
	}
	return err
}
func (h captionHost) MaxDuration(r *http.Request) time.Duration {
	return callerOf(r).Limits.MaxDuration
}
func (h captionHost) Decode(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSON(w, r, v)
}
func (h captionHost) Logger(r *http.Request) *slog.Logger { return logger(r, h.s.cfg.Log) }
func (h captionHost) CDNURL(r *http.Request) string       { return h.s.cdnURL(r) }
func (h captionHost) NewID() string                       { return h.s.cfg.Store.NewID() }

// keyHost is what the key endpoints (package keys) use of the server.
type keyHost struct{ s *Server }

func (h keyHost) Account(r *http.Request) string { return callerOf(r).Account }
func (h keyHost) User(r *http.Request) string    { return callerOf(r).User }
func (h keyHost) Execute(r *http.Request, account string, cmd any) (eventstore.Result[domain.Account], error) {
	res, err := execute[domain.Account](r, h.s.cfg.Store, domain.AccountStream(account), cmd)
	if err == nil {
		h.s.settleFor(r, account, res.LastSeq())
	}
	return res, err
}
func (h keyHost) Decode(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSON(w, r, v)
}
func (h keyHost) Logger(r *http.Request) *slog.Logger { return logger(r, h.s.cfg.Log) }
func (h keyHost) NewID() string                       { return h.s.cfg.Store.NewID() }
func (h keyHost) KeyLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error) {
	return adminHost(h).KeyLastUsed(ctx, keyIDs)
}
