package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/httpapi/probes"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/tus"
)

// The API server's side of the upload handler (package tus): what it
// needs of the server, and the server's own parts of tus (the method
// override, the sweeps' loop, redacted tokens in logs).

// uploadHost is what the upload handler (package tus) uses of the
// server.
type uploadHost struct{ s *Server }

var _ tus.Host = uploadHost{}

func (h uploadHost) Caller(r *http.Request) tus.Caller {
	c := callerOf(r)
	return tus.Caller{Account: c.Account, Limits: c.Limits}
}

func (h uploadHost) Admit(w http.ResponseWriter, r *http.Request, account, id string) (tus.Caller, *http.Request, error) {
	c, r, err := h.s.admitAccount(w, r, account, id)
	return tus.Caller{Account: c.Account, Limits: c.Limits}, r, err
}

func (h uploadHost) GuardCredentials(w http.ResponseWriter, r *http.Request, check func() error) error {
	return h.s.guardCredentials(w, r, check)
}

func (h uploadHost) Limits(account string) (domain.Limits, error) {
	acct, ok, err := h.s.cfg.DB.Account(account)
	if err == nil && !ok {
		err = errNotFound("upload")
	}
	if err != nil {
		return domain.Limits{}, err
	}
	return acct.Limits(h.s.cfg.Plans), nil
}

func (h uploadHost) Decode(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSON(w, r, v)
}
func (h uploadHost) Logger(r *http.Request) *slog.Logger { return logger(r, h.s.cfg.Log) }
func (h uploadHost) LoggerFrom(ctx context.Context) *slog.Logger {
	return loggerFrom(ctx, h.s.cfg.Log)
}
func (h uploadHost) PublicBase(r *http.Request) string { return h.s.publicBase(r) }
func (h uploadHost) Writable() error                   { return h.s.writableNow() }
func (h uploadHost) StoresReady(ctx context.Context) bool {
	return h.s.storesReady(ctx)
}

func (h uploadHost) Acquire(w http.ResponseWriter, pool string, limit int) (func(), error) {
	return h.s.uploads.acquire(w, pool, limit)
}
func (h uploadHost) CheckRoom(n int64) error { return h.s.checkRoom(n) }

func (h uploadHost) ClaimRoom(n int64) (*diskspace.Claim, error) { return h.s.claimRoom(n) }
func (h uploadHost) CheckStorage(account string, l domain.Limits, n int64) error {
	return h.s.checkStorage(account, l, n)
}
func (h uploadHost) Disk() diskspace.Guard { return h.s.disk }
func (h uploadHost) StoreFailure(w http.ResponseWriter, err error) error {
	return storeFailure(w, err)
}

func (h uploadHost) Body(w http.ResponseWriter, r *http.Request) tus.Body {
	return chunkBody{newIdleBody(w, r, h.s.cfg.Uploads.IdleTimeout, h.s.cfg.Now)}
}

func (h uploadHost) Collection(ctx context.Context, account, slug string) error {
	_, err := h.s.uploadCollection(ctx, account, slug)
	return err
}

func (h uploadHost) Settings(policy, download *string) (tus.Settings, error) {
	var u uploadSettings
	return u, parseSettings(&u, policy, download)
}

func (h uploadHost) Sniff(r io.Reader) error {
	_, err := sniffVideo(r)
	return err
}

func (h uploadHost) Accept(ctx context.Context, f tus.File) error {
	return h.s.acceptUpload(ctx, upload(f))
}

func (h uploadHost) Accepted(ctx context.Context, id, account string) (bool, error) {
	return h.s.uploadAccepted(ctx, id, account)
}

func (h uploadHost) Refused(err error) bool { return refused(err) }

// chunkBody is a tus chunk's body: an idleBody.
type chunkBody struct{ *idleBody }

func (b chunkBody) Done()      { b.done() }
func (b chunkBody) Interrupt() { b.interrupt() }
func (b chunkBody) Error(w http.ResponseWriter, err error, kept bool) error {
	return b.chunkError(w, err, kept)
}

// chunkError is bodyError for a tus chunk (tus.Body's Error). A body ended for being idle
// or too slow answers 503 with Retry-After: 1, not the 408 of a multipart
// upload: tus clients retry 5xx but no 4xx except 409 and 423 (tus-js-
// client's default), and a tus upload has something to resume (tusd
// answers its read timeout with a 5xx too, 500). kept says whether the
// chunk's bytes were kept.
func (body *idleBody) chunkError(w http.ResponseWriter, err error, kept bool) error {
	if errors.Is(err, errTakenOver) || !body.slow && !body.timedOut {
		return body.bodyError(w, err)
	}
	why := "no data arrived for " + body.idle.String()
	if body.slow {
		why = fmt.Sprintf("the chunk arrived slower than %d bytes a second over %s", uploadMinRate, uploadRateWindow)
	}
	what := "the bytes that arrived are kept"
	if !kept {
		what = "nothing of this chunk was kept (it carries Upload-Checksum)"
	}
	w.Header().Set("Connection", "close")
	w.Header().Set("Retry-After", "1")
	return domain.Wrap("upload video", domain.Unavailable, err,
		why+" and the request was ended; "+what+": send HEAD and resume from its Upload-Offset")
}

// SweepUploads looks after this node's tus uploads until ctx ends: it
// removes the expired ones now and every few minutes, and tries again to
// accept the pending ones now and every few seconds. kino serve runs it.
func (s *Server) SweepUploads(ctx context.Context) { s.tusUploads.Run(ctx, s.tusRetryEvery) }

// uploadAccepted reports whether upload id (of account) is a video already: a try
// stored its event (the read models may not show it yet).
func (s *Server) uploadAccepted(ctx context.Context, id, account string) (bool, error) {
	if v, ok, err := s.cfg.DB.Video(id); err == nil && ok && v.Account == account {
		return true, nil
	}
	events, _, err := s.cfg.Store.Load(ctx, videoStream(id))
	if err != nil && !domain.IsKind(err, domain.Unavailable) && eventstore.IsUnavailable(err) {
		err = domain.Wrap("upload video", domain.Unavailable, err, "The event store is not answering; retry in a few seconds")
	}
	if err != nil {
		return false, err
	}
	return domain.Fold[domain.Video](events).Created, nil
}

// storesReady reports whether an acceptance may succeed now: the event
// store takes writes, and the media store answers.
func (s *Server) storesReady(ctx context.Context) bool {
	if s.writableNow() != nil {
		return false
	}
	m, ok := s.cfg.Media.(Readier)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(eventstore.FailFast(ctx), probes.Timeout)
	defer cancel()
	return m.Ready(ctx) == nil
}

// The rate budgets of direct upload URLs: each URL and its upload at
// most directRequestsPerMinute (generous enough for any tus client's
// chunks and retries), and all of an account's URLs together
// directPlanFactor times its plan's requests per minute. Neither is the
// account's API budget (a URL is in the hands of an untrusted end user,
// who must not lock the account out of its API), but the second follows
// the plan, so that issuing more URLs does not multiply what an account
// may send.
const (
	directRequestsPerMinute = 600
	directPlanFactor        = 10
)

// admitAccount makes a request on a direct upload URL (of video id) the
// account's: its plan's limits, and the URL's and the account's direct
// upload budgets (the X-RateLimit-* headers as on every authenticated
// request).
func (s *Server) admitAccount(w http.ResponseWriter, r *http.Request, slug, id string) (caller, *http.Request, error) {
	acct, ok, err := s.cfg.DB.Account(slug)
	if err == nil && !ok {
		err = errNotFound("upload")
	}
	if err != nil {
		return caller{}, r, err
	}
	limits := acct.Limits(s.cfg.Plans)
	// Slugs never hold a colon: "direct:" and "uploads:" keys collide with
	// no account's budget, nor a user's.
	if err := s.chargeAll(w,
		budget{"direct:" + id, directRequestsPerMinute, "this direct upload URL"},
		budget{"uploads:" + acct.Slug, directPlanFactor * limits.RequestsPerMinute, "the account's direct upload URLs together"},
	); err != nil {
		return caller{}, r, err
	}
	c := caller{Account: acct.Slug, Plan: acct.Plan, Limits: limits}
	s.awaitOwnWrites(r.Context(), acct.Slug, allWrites)
	return c, withCaller(r, s.cfg.Log, c), nil
}

// publicBase is the API's public base (ending in /v1): the configured
// one, else the request's own host.
func (s *Server) publicBase(r *http.Request) string {
	if s.cfg.Origin.BaseURL != "" {
		return s.cfg.Origin.BaseURL
	}
	return s.origin(r) + "/v1"
}

// tusMethodOverride honours X-HTTP-Method-Override on a POST to a tus
// upload URL, for PATCH, DELETE and HEAD, as tusd does: some clients
// (tus-js-client's overridePatchMethod) and proxies cannot send PATCH.
// Elsewhere it means nothing. A browser's cookie-authenticated POST is
// checked for cross-origin as the POST it was sent as: overridden to HEAD
// it would otherwise pass as a safe method.
func (s *Server) tusMethodOverride(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/uploads/tus/") {
			switch m := r.Header.Get("X-HTTP-Method-Override"); m {
			case http.MethodPatch, http.MethodDelete, http.MethodHead:
				if r.Header.Get("Authorization") == "" && s.sessionID(r) != "" && !strings.HasPrefix(r.URL.Path, "/v1/uploads/tus/direct/") {
					if err := s.crossOrigin(r); err != nil {
						respond.Error(w, logger(r, s.cfg.Log), err)
						return
					}
				}
				r.Method = m
			}
		}
		next.ServeHTTP(w, r)
	})
}

// redactPath is a request path fit for logs: a direct upload URL's token
// is a credential.
func redactPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/v1/uploads/tus/direct/")
	if !ok {
		return p
	}
	if _, id, ok := strings.Cut(rest, "/"); ok {
		return "/v1/uploads/tus/direct/REDACTED/" + id
	}
	return "/v1/uploads/tus/direct/REDACTED"
}
