package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
)

// The operator's endpoints under /v1/admin: accounts, their keys, the
// instance's health, and rebuilding or verifying the read models. None
// takes an account's API key.

// adminRoutes registers every /v1/admin route of this file, each behind
// operatorOnly (an operator's session, or kino's --admin-token as a
// Bearer value): the one place that names the operator's guard.
func (s *Server) adminRoutes() {
	admin := func(path string, h handlerFunc, method string) {
		s.router.Handle("/v1/admin"+path, s.operatorOnly(h)).Methods(method)
	}
	admin("/replay", s.adminReplay, http.MethodPost)
	admin("/replay", s.adminReplayStatus, http.MethodGet)
	admin("/accounts", s.adminListAccounts, http.MethodGet)
	admin("/accounts", s.adminCreateAccount, http.MethodPost)
	admin("/accounts/{slug}", s.adminGetAccount, http.MethodGet)
	admin("/accounts/{slug}", s.adminChangePlan, http.MethodPatch)
	admin("/accounts/{slug}/keys", s.adminListKeys, http.MethodGet)
	admin("/accounts/{slug}/keys", s.adminCreateKey, http.MethodPost)
	admin("/accounts/{slug}/keys/{id}", s.adminRevokeKey, http.MethodDelete)
	admin("/health", s.adminHealth, http.MethodGet)
}

// checkAdminToken checks the request's Bearer value against kino's
// --admin-token, in constant time.
func (s *Server) checkAdminToken(r *http.Request) error {
	got, want := sha256.Sum256([]byte(bearer(r))), sha256.Sum256([]byte(s.cfg.AdminToken))
	switch {
	case bearer(r) == "":
		return errMissingKey()
	case s.cfg.AdminToken == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1:
		return domain.E("admin", domain.BadCredentials, "The admin token is invalid")
	}
	return nil
}

// --- accounts ---

// adminAccount is an account as the operator sees it.
type adminAccount struct {
	Slug         string                `json:"slug"`
	Plan         domain.Plan           `json:"plan"`
	CreatedAt    string                `json:"createdAt"`
	Videos       map[domain.Status]int `json:"videos"`
	StorageBytes int64                 `json:"storageBytes"`
}

func (s *Server) renderAdminAccount(a projections.Account) (adminAccount, error) {
	u, err := s.cfg.DB.Usage(a.Slug)
	if err != nil {
		return adminAccount{}, err
	}
	return adminAccount{Slug: a.Slug, Plan: a.Plan, CreatedAt: domain.FormatTime(a.CreatedAt), Videos: u.Videos(), StorageBytes: u.StorageBytes}, nil
}

func (s *Server) adminListAccounts(w http.ResponseWriter, r *http.Request) error {
	accts, err := s.cfg.DB.Accounts()
	if err != nil {
		return err
	}
	out := make([]adminAccount, len(accts))
	for i, a := range accts {
		if out[i], err = s.renderAdminAccount(a); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Data []adminAccount `json:"data"`
	}{out})
	return nil
}

// accountVar is the account named by the {slug} path variable.
func (s *Server) accountVar(r *http.Request) (projections.Account, error) {
	slug := mux.Vars(r)["slug"]
	if !domain.ValidSlug(slug) {
		return projections.Account{}, errNotFound("account")
	}
	a, ok, err := s.cfg.DB.Account(slug)
	if err == nil && !ok {
		err = errNotFound("account " + slug)
	}
	return a, err
}

func (s *Server) writeAdminAccount(w http.ResponseWriter, status int, slug string) error {
	a, ok, err := s.cfg.DB.Account(slug)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound("account " + slug)
	}
	out, err := s.renderAdminAccount(a)
	if err != nil {
		return err
	}
	writeJSON(w, status, out)
	return nil
}

func (s *Server) adminGetAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := s.accountVar(r)
	if err != nil {
		return err
	}
	return s.writeAdminAccount(w, http.StatusOK, a.Slug)
}

// adminCreateAccount: {"slug", "plan"} (plan defaults to free) -> 201;
// 409 when the slug is taken.
func (s *Server) adminCreateAccount(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Slug *string `json:"slug"`
		Plan string  `json:"plan"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.Slug == nil {
		return errBadRequest("slug is required")
	}
	// Checked before the slug names a stream (and so NATS subjects).
	if !domain.ValidSlug(*body.Slug) {
		return errBadRequest("slug must match ^[a-z0-9][a-z0-9-]{0,62}$ (got %q)", truncateRunes(*body.Slug, 80))
	}
	if body.Plan == "" {
		body.Plan = string(domain.PlanFree)
	}
	plan, err := domain.ParsePlan(body.Plan)
	if err != nil {
		return err
	}
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(*body.Slug), domain.CreateAccount{Slug: *body.Slug, Plan: plan})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("account created by the operator", "account", *body.Slug, "plan", plan)
	return s.writeAdminAccount(w, http.StatusCreated, *body.Slug)
}

// adminChangePlan: {"plan"} -> 200 with the account; its limits apply from
// its next request.
func (s *Server) adminChangePlan(w http.ResponseWriter, r *http.Request) error {
	a, err := s.accountVar(r)
	if err != nil {
		return err
	}
	var body struct {
		Plan *string `json:"plan"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.Plan == nil {
		return errBadRequest("plan is required: one of free, pro, business")
	}
	plan, err := domain.ParsePlan(*body.Plan)
	if err != nil {
		return err
	}
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(a.Slug), domain.ChangePlan{Plan: plan})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("plan changed by the operator", "account", a.Slug, "plan", plan)
	return s.writeAdminAccount(w, http.StatusOK, a.Slug)
}

// --- keys of any account ---

// adminKey is an API key as listed: never the key itself.
type adminKey struct {
	ID        string `json:"id"`
	Prefix    string `json:"prefix"`
	Label     string `json:"label"`
	CreatedAt string `json:"createdAt"`
}

// accountKeys lists the live keys of an account, oldest first. It is the
// one place the admin endpoints read keys from: the account's own events
// (keys are few), so it needs nothing of the read models.
func (s *Server) accountKeys(ctx context.Context, slug string) ([]adminKey, error) {
	a, err := eventstore.Current[domain.Account](ctx, s.cfg.Store, domain.AccountStream(slug))
	if err != nil {
		return nil, err
	}
	out := []adminKey{}
	for _, k := range a.Keys {
		if !k.Revoked {
			out = append(out, adminKey{ID: k.ID, Prefix: k.Prefix, Label: k.Label, CreatedAt: domain.FormatTime(k.IssuedAt)})
		}
	}
	return out, nil
}

func (s *Server) adminListKeys(w http.ResponseWriter, r *http.Request) error {
	a, err := s.accountVar(r)
	if err != nil {
		return err
	}
	keys, err := s.accountKeys(r.Context(), a.Slug)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Data []adminKey `json:"data"`
	}{keys})
	return nil
}

// adminCreateKey: {"label"} -> 201 with the full key, shown only here.
func (s *Server) adminCreateKey(w http.ResponseWriter, r *http.Request) error {
	a, err := s.accountVar(r)
	if err != nil {
		return err
	}
	var body struct {
		Label string `json:"label"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
	}
	key, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		return err
	}
	id, prefix := s.cfg.Store.NewID(), key[:len(domain.KeyPrefix)+4]
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(a.Slug),
		domain.IssueKey{KeyID: id, Hash: domain.HashKey(key), Prefix: prefix, Label: body.Label})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq()) // the key works on this node as soon as it is shown
	logger(r, s.cfg.Log).Info("key created by the operator", "account", a.Slug, "key_id", id)
	writeJSON(w, http.StatusCreated, struct {
		adminKey
		Key string `json:"key"`
	}{adminKey{ID: id, Prefix: prefix, Label: body.Label, CreatedAt: domain.FormatTime(res.Events[0].OccurredAt)}, key})
	return nil
}

// adminRevokeKey -> 204; requests with the key answer 401 from then on.
// A key of another account is not found (404).
func (s *Server) adminRevokeKey(w http.ResponseWriter, r *http.Request) error {
	a, err := s.accountVar(r)
	if err != nil {
		return err
	}
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("key")
	}
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(a.Slug), domain.RevokeKey{KeyID: id})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("key revoked by the operator", "account", a.Slug, "key_id", id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// --- health ---

// adminHealth describes the instance as this node sees it: its NATS
// connection, the event stream (leader, replicas), the read models' lag,
// the kino processes seen (heartbeats), queue depths, and /readyz's
// checks. It answers 200 even when parts fail: each part says so.
func (s *Server) adminHealth(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	type part = map[string]any
	out := struct {
		Status     string             `json:"status"` // ok, or degraded when a check fails
		NATS       any                `json:"nats"`
		JetStream  part               `json:"jetstream"`
		ReadModels part               `json:"readModels"`
		Workers    []queue.WorkerInfo `json:"workers"`
		Queues     part               `json:"queues"`
		Media      string             `json:"media"`
		Disk       string             `json:"disk"`
		Checks     map[string]string  `json:"checks"`
		Errors     []string           `json:"errors"`
	}{Status: "ok", NATS: s.cfg.Store.Conn(ctx), Workers: []queue.WorkerInfo{}, Checks: map[string]string{}, Errors: []string{}}
	log := logger(r, s.cfg.Log)
	failed := func(what string, err error) {
		log.Warn("admin health: "+what, "err", err)
		out.Errors = append(out.Errors, what+" is unknown (see the server log)")
	}

	out.JetStream = part{"writes": "ok"}
	if err := s.writeFault(); err != nil {
		out.JetStream["writes"] = "the event store is not accepting writes"
	}
	stream, err := s.cfg.Store.Status(ctx)
	if err != nil {
		failed("the event stream", err)
	} else {
		out.JetStream["stream"] = stream
	}

	applied := s.cfg.Projector.Applied()
	out.ReadModels = part{"applied": applied, "lastSeq": nil, "lag": nil, "error": nil}
	if perr := s.cfg.Projector.Err(); perr != nil {
		out.ReadModels["error"] = "the projector has stopped (see the server log)"
	}
	if err == nil {
		out.ReadModels["lastSeq"] = stream.LastSeq
		out.ReadModels["lag"] = stream.LastSeq - min(applied, stream.LastSeq)
	}

	if ws, err := queue.New(s.cfg.Store).Workers(ctx); err != nil {
		failed("the workers seen", err)
	} else {
		out.Workers = ws
	}

	out.Queues = part{"transcode": nil, "deliveries": nil}
	if n, err := queue.New(s.cfg.Store).JobsUnfinished(ctx, queue.TranscodeIntake); err != nil {
		failed("the transcode queue", err)
	} else {
		out.Queues["transcode"] = n
	}
	if n, err := queue.New(s.cfg.Store).DeliveriesQueued(ctx); err != nil {
		failed("the delivery queue", err)
	} else {
		out.Queues["deliveries"] = n
	}

	for _, c := range s.readyChecks() {
		problem, detail := c.run(ctx)
		if problem == "" {
			problem = "ok"
		} else {
			out.Status = "degraded"
			if detail != nil {
				log.Warn("admin health: check failed", "check", c.name, "err", detail)
			}
		}
		out.Checks[c.name] = problem
	}
	out.Media, out.Disk = out.Checks["media"], out.Checks["disk"]
	if len(out.Errors) > 0 {
		out.Status = "degraded"
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// --- replay ---

// ReplayProgress is how far a running rebuild or verify has come.
type ReplayProgress struct {
	Events, Total   uint64
	EventsPerSecond float64
}

// replayStatus is the last rebuild or verify this node ran (GET
// /v1/admin/replay).
type replayStatus struct {
	ID              string  `json:"id"`
	Verify          bool    `json:"verify"`
	State           string  `json:"state"` // running, done, failed
	Events          uint64  `json:"events"`
	Total           uint64  `json:"total"`
	EventsPerSecond float64 `json:"eventsPerSecond"`
	StartedAt       string  `json:"startedAt"`
	FinishedAt      *string `json:"finishedAt"`
	Result          any     `json:"result"`
	Error           *string `json:"error"`
}

// replays holds this node's replay: one at a time.
type replays struct {
	mu   sync.Mutex
	last *replayStatus
}

func (rs *replays) snapshot() (replayStatus, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.last == nil {
		return replayStatus{}, false
	}
	return *rs.last, true
}

func (rs *replays) update(fn func(*replayStatus)) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	fn(rs.last)
}

// adminReplay starts a rebuild of this node's read models (or, with
// {"verify": true}, a comparison of them with a rebuild) in the
// background: 202 {"id", ...}; 409 while one runs. The node keeps serving
// throughout (docs/operations.md). GET /v1/admin/replay follows it.
func (s *Server) adminReplay(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Admin == nil {
		return domain.E("replay", domain.Unavailable, "rebuilding the read models is not available on this server")
	}
	var body struct {
		Verify bool `json:"verify"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
	}
	rs := &s.replays
	rs.mu.Lock()
	if rs.last != nil && rs.last.State == "running" {
		id := rs.last.ID
		rs.mu.Unlock()
		return domain.E("replay", domain.Conflict, "replay %s is still running; follow it with GET /v1/admin/replay", id)
	}
	st := &replayStatus{ID: s.cfg.Store.NewID(), Verify: body.Verify, State: "running", StartedAt: domain.FormatTime(s.cfg.Now())}
	rs.last = st
	started := *st
	rs.mu.Unlock()

	log := logger(r, s.cfg.Log).With("replay_id", st.ID, "verify", body.Verify)
	log.Info("replay requested over HTTP")
	go func() {
		res, err := s.cfg.Admin.Replay(context.Background(), body.Verify, func(p ReplayProgress) {
			rs.update(func(st *replayStatus) { st.Events, st.Total, st.EventsPerSecond = p.Events, p.Total, p.EventsPerSecond })
		})
		rs.update(func(st *replayStatus) {
			end := domain.FormatTime(s.cfg.Now())
			st.FinishedAt = &end
			if err != nil {
				log.Error("replay failed", "err", err)
				msg := "the replay failed; the server log says why"
				st.State, st.Error = "failed", &msg
				return
			}
			log.Info("replay done")
			st.State, st.Result = "done", res
			if st.Events < st.Total {
				st.Events = st.Total
			}
		})
	}()
	writeJSON(w, http.StatusAccepted, started)
	return nil
}

// adminReplayStatus is the progress of the running replay, or the outcome
// of the last; {"state": "idle"} when none ran since this node started.
func (s *Server) adminReplayStatus(w http.ResponseWriter, r *http.Request) error {
	st, ok := s.replays.snapshot()
	if !ok {
		writeJSON(w, http.StatusOK, map[string]string{"state": "idle"})
		return nil
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// truncateRunes shortens s to at most n runes for a message.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
