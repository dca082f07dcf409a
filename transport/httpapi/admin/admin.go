// Package admin is the operator's protocol under /v1/admin: accounts and
// their plans, any account's API keys, the instance's health, and
// rebuilding or verifying the read models in the background. None of it
// takes an account's API key: httpapi's routes.go mounts every route
// behind one guard (an operator's session or the admin token), and errors
// are answered by respond.Error like every other protocol's.
package admin

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/probes"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

// Projector is what admin needs of the projector: how far the read models
// are, and whether it stopped.
type Projector interface {
	Applied() uint64
	Err() error
}

// Replayer rebuilds (or verifies) the read models of a running service,
// reporting its progress now and then.
type Replayer interface {
	Replay(ctx context.Context, verify bool, progress func(ReplayProgress)) (result any, err error)
}

// Host is what admin needs of the API server that mounts it: reading a
// request's JSON body and its logger, waiting for the read models to
// include a write, and the readiness checks health reports.
type Host interface {
	Decode(w http.ResponseWriter, r *http.Request, v any) error
	Logger(r *http.Request) *slog.Logger
	// Settle waits for the read models to include seq, a write to
	// account's stream; when they do not in time, that account's next
	// requests wait for it (one may be made with a key it revoked).
	Settle(r *http.Request, account string, seq uint64)
	WriteFault() error
	Checks() []probes.Check // /readyz's checks
	// KeyLastUsed is when each of these keys last authenticated a request
	// (to about a minute; absent: never, or not known).
	KeyLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error)
}

// Store is what the operator's endpoints need of the event store (an
// *eventstore.Store): the log account commands run on, ids, and the
// connection's and stream's state for /v1/admin/health.
type Store interface {
	eventstore.Log
	NewID() string
	Conn(ctx context.Context) eventstore.ConnStatus
	Status(ctx context.Context) (eventstore.StreamStatus, error)
}

// Queues is what /v1/admin/health reads of the work queues (a
// *queue.Queues): the workers seen, the transcodes and deliveries waiting.
type Queues interface {
	Workers(ctx context.Context) ([]queue.WorkerInfo, error)
	JobsUnfinished(ctx context.Context, intake string) (int, error)
	DeliveriesQueued(ctx context.Context) (uint64, error)
}

// Config wires the operator's endpoints.
type Config struct {
	Store     Store
	Queues    Queues
	DB        *projections.DB
	Projector Projector
	Replayer  Replayer // nil: POST /v1/admin/replay answers 503
	Host      Host
	Plans     domain.Plans // what each plan allows (an account's quota)
	Now       func() time.Time
}

// Handler serves /v1/admin.
type Handler struct {
	cfg     Config
	replays replays // POST /v1/admin/replay: one at a time
}

// New makes the operator's endpoints.
func New(cfg Config) *Handler { return &Handler{cfg: cfg} }

// Routes hands each route (a path under /v1/admin, its handler, its
// method) to mount, which puts it behind the operator's guard.
func (h *Handler) Routes(mount func(path string, handle func(http.ResponseWriter, *http.Request) error, method string)) {
	mount("/replay", h.replay, http.MethodPost)
	mount("/replay", h.replayStatusOf, http.MethodGet)
	mount("/accounts", h.listAccounts, http.MethodGet)
	mount("/accounts", h.createAccount, http.MethodPost)
	mount("/accounts/{slug}", h.getAccount, http.MethodGet)
	mount("/accounts/{slug}", h.updateAccount, http.MethodPatch)
	mount("/accounts/{slug}/keys", h.listKeys, http.MethodGet)
	mount("/accounts/{slug}/keys", h.createKey, http.MethodPost)
	mount("/accounts/{slug}/keys/{id}", h.revokeKey, http.MethodDelete)
	mount("/health", h.health, http.MethodGet)
}

// writeTimeout bounds a command's load-decide-append.
const writeTimeout = 30 * time.Second

// execute runs a command on an account for a request, to its end even if
// the client goes away (an append that may have landed must finish).
func execute(r *http.Request, s eventstore.Log, id domain.StreamID, cmd any) (eventstore.Result[domain.Account], error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), writeTimeout)
	defer cancel()
	return eventstore.Execute[domain.Account](ctx, s, id, cmd)
}

func notFound(what string) error { return domain.E("", domain.NotFound, "%s not found", what) }

func invalid(format string, args ...any) error { return domain.E("", domain.Invalid, format, args...) }

// --- accounts ---

// adminAccount is an account as the operator sees it.
type adminAccount struct {
	Slug         string                `json:"slug"`
	Plan         domain.Plan           `json:"plan"`
	CreatedAt    string                `json:"createdAt"`
	Videos       map[domain.Status]int `json:"videos"`
	StorageBytes int64                 `json:"storageBytes"`
	// StorageQuotaBytes is the quota in force (null: none);
	// StorageQuotaOwn tells whether it is the account's own rather than
	// its plan's.
	StorageQuotaBytes *int64 `json:"storageQuotaBytes"`
	StorageQuotaOwn   bool   `json:"storageQuotaOwn"`
}

func (h *Handler) renderAdminAccount(a projections.Account) (adminAccount, error) {
	u, err := h.cfg.DB.Usage(a.Slug)
	if err != nil {
		return adminAccount{}, err
	}
	out := adminAccount{Slug: a.Slug, Plan: a.Plan, CreatedAt: domain.FormatTime(a.CreatedAt), Videos: u.Videos(),
		StorageBytes: u.StorageBytes, StorageQuotaOwn: a.StorageQuota != nil}
	if q := a.Limits(h.cfg.Plans).StorageBytes; q > 0 {
		out.StorageQuotaBytes = &q
	}
	return out, nil
}

func (h *Handler) listAccounts(w http.ResponseWriter, r *http.Request) error {
	accts, err := h.cfg.DB.Accounts()
	if err != nil {
		return err
	}
	out := make([]adminAccount, len(accts))
	for i, a := range accts {
		if out[i], err = h.renderAdminAccount(a); err != nil {
			return err
		}
	}
	respond.JSON(w, http.StatusOK, struct {
		Data []adminAccount `json:"data"`
	}{out})
	return nil
}

// accountVar is the account named by the {slug} path variable.
func (h *Handler) accountVar(r *http.Request) (projections.Account, error) {
	slug := mux.Vars(r)["slug"]
	if !domain.ValidSlug(slug) {
		return projections.Account{}, notFound("account")
	}
	a, ok, err := h.cfg.DB.Account(slug)
	if err == nil && !ok {
		err = notFound("account " + slug)
	}
	return a, err
}

func (h *Handler) writeAdminAccount(w http.ResponseWriter, status int, slug string) error {
	a, ok, err := h.cfg.DB.Account(slug)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("account " + slug)
	}
	out, err := h.renderAdminAccount(a)
	if err != nil {
		return err
	}
	respond.JSON(w, status, out)
	return nil
}

func (h *Handler) getAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := h.accountVar(r)
	if err != nil {
		return err
	}
	return h.writeAdminAccount(w, http.StatusOK, a.Slug)
}

// createAccount: {"slug", "plan"} (plan defaults to free) -> 201;
// 409 when the slug is taken.
func (h *Handler) createAccount(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Slug *string `json:"slug"`
		Plan string  `json:"plan"`
	}
	if err := h.cfg.Host.Decode(w, r, &body); err != nil {
		return err
	}
	if body.Slug == nil {
		return invalid("slug is required")
	}
	// Checked before the slug names a stream (and so NATS subjects).
	if !domain.ValidSlug(*body.Slug) {
		return invalid("slug must match ^[a-z0-9][a-z0-9-]{0,62}$ (got %q)", truncateRunes(*body.Slug, 80))
	}
	if body.Plan == "" {
		body.Plan = string(domain.PlanFree)
	}
	plan, err := domain.ParsePlan(body.Plan)
	if err != nil {
		return err
	}
	res, err := execute(r, h.cfg.Store, domain.AccountStream(*body.Slug), domain.CreateAccount{Slug: *body.Slug, Plan: plan})
	if err != nil {
		return err
	}
	h.cfg.Host.Settle(r, *body.Slug, res.LastSeq())
	h.cfg.Host.Logger(r).Info("account created by the operator", "account", *body.Slug, "plan", plan)
	return h.writeAdminAccount(w, http.StatusCreated, *body.Slug)
}

// updateAccount: {"plan", "storageQuotaBytes"}, either or both -> 200
// with the account; its limits apply from its next request. The quota is
// a number of bytes (0: none), or null: the plan's again.
func (h *Handler) updateAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := h.accountVar(r)
	if err != nil {
		return err
	}
	var body struct {
		Plan  *string         `json:"plan"`
		Quota json.RawMessage `json:"storageQuotaBytes"`
	}
	if err := h.cfg.Host.Decode(w, r, &body); err != nil {
		return err
	}
	if body.Plan == nil && body.Quota == nil {
		return invalid("send plan (free, pro or business), storageQuotaBytes (bytes, 0 for none, null for the plan's), or both")
	}
	var cmds []any
	if body.Plan != nil {
		plan, err := domain.ParsePlan(*body.Plan)
		if err != nil {
			return err
		}
		cmds = append(cmds, domain.ChangePlan{Plan: plan})
	}
	if body.Quota != nil {
		var quota *int64
		if err := json.Unmarshal(body.Quota, &quota); err != nil {
			return invalid("storageQuotaBytes must be a whole number of bytes (0: no quota) or null (the plan's)")
		}
		// Checked before anything is written, so that a bad quota leaves
		// the plan as it was.
		if err := domain.CheckStorageQuota(quota); err != nil {
			return err
		}
		cmds = append(cmds, domain.SetStorageQuota{Bytes: quota})
	}
	for _, cmd := range cmds {
		res, err := execute(r, h.cfg.Store, domain.AccountStream(a.Slug), cmd)
		if err != nil {
			return err
		}
		h.cfg.Host.Settle(r, a.Slug, res.LastSeq())
	}
	h.cfg.Host.Logger(r).Info("account changed by the operator", "account", a.Slug, "plan", body.Plan != nil, "storage_quota", body.Quota != nil)
	return h.writeAdminAccount(w, http.StatusOK, a.Slug)
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
func (h *Handler) accountKeys(ctx context.Context, slug string) ([]adminKey, error) {
	a, err := eventstore.Current[domain.Account](ctx, h.cfg.Store, domain.AccountStream(slug))
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

// listedKey is a key as the list shows it: with when it was last used
// (null: never).
type listedKey struct {
	adminKey
	LastUsedAt *string `json:"lastUsedAt"`
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request) error {
	a, err := h.accountVar(r)
	if err != nil {
		return err
	}
	keys, err := h.accountKeys(r.Context(), a.Slug)
	if err != nil {
		return err
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	used, err := h.cfg.Host.KeyLastUsed(r.Context(), ids)
	if err != nil {
		return err
	}
	out := make([]listedKey, len(keys))
	for i, k := range keys {
		out[i].adminKey = k
		if t, ok := used[k.ID]; ok {
			at := domain.FormatTime(t)
			out[i].LastUsedAt = &at
		}
	}
	respond.JSON(w, http.StatusOK, struct {
		Data []listedKey `json:"data"`
	}{out})
	return nil
}

// createKey: {"label"} -> 201 with the full key, shown only here.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) error {
	a, err := h.accountVar(r)
	if err != nil {
		return err
	}
	var body struct {
		Label string `json:"label"`
	}
	if r.ContentLength != 0 {
		if err := h.cfg.Host.Decode(w, r, &body); err != nil {
			return err
		}
	}
	key, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		return err
	}
	id, prefix := h.cfg.Store.NewID(), key[:len(domain.KeyPrefix)+4]
	res, err := execute(r, h.cfg.Store, domain.AccountStream(a.Slug),
		domain.IssueKey{KeyID: id, Hash: domain.HashKey(key), Prefix: prefix, Label: body.Label})
	if err != nil {
		return err
	}
	h.cfg.Host.Settle(r, a.Slug, res.LastSeq()) // the key works on this node as soon as it is shown
	h.cfg.Host.Logger(r).Info("key created by the operator", "account", a.Slug, "key_id", id)
	respond.JSON(w, http.StatusCreated, struct {
		adminKey
		Key string `json:"key"`
	}{adminKey{ID: id, Prefix: prefix, Label: body.Label, CreatedAt: domain.FormatTime(res.Events[0].OccurredAt)}, key})
	return nil
}

// revokeKey -> 204; requests with the key answer 401 from then on.
// A key of another account is not found (404).
func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request) error {
	a, err := h.accountVar(r)
	if err != nil {
		return err
	}
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return notFound("key")
	}
	res, err := execute(r, h.cfg.Store, domain.AccountStream(a.Slug), domain.RevokeKey{KeyID: id})
	if err != nil {
		return err
	}
	h.cfg.Host.Settle(r, a.Slug, res.LastSeq())
	h.cfg.Host.Logger(r).Info("key revoked by the operator", "account", a.Slug, "key_id", id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// --- health ---

// health describes the instance as this node sees it: its NATS
// connection, the event stream (leader, replicas), the read models' lag,
// the kino processes seen (heartbeats), queue depths, and /readyz's
// checks. It answers 200 even when parts fail: each part says so.
func (h *Handler) health(w http.ResponseWriter, r *http.Request) error {
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
	}{Status: "ok", NATS: h.cfg.Store.Conn(ctx), Workers: []queue.WorkerInfo{}, Checks: map[string]string{}, Errors: []string{}}
	log := h.cfg.Host.Logger(r)
	failed := func(what string, err error) {
		log.Warn("admin health: "+what, "err", err)
		out.Errors = append(out.Errors, what+" is unknown (see the server log)")
	}

	out.JetStream = part{"writes": "ok"}
	if err := h.cfg.Host.WriteFault(); err != nil {
		out.JetStream["writes"] = "the event store is not accepting writes"
	}
	stream, err := h.cfg.Store.Status(ctx)
	if err != nil {
		failed("the event stream", err)
	} else {
		out.JetStream["stream"] = stream
	}

	applied := h.cfg.Projector.Applied()
	out.ReadModels = part{"applied": applied, "lastSeq": nil, "lag": nil, "error": nil}
	if perr := h.cfg.Projector.Err(); perr != nil {
		out.ReadModels["error"] = "the projector has stopped (see the server log)"
	}
	if err == nil {
		out.ReadModels["lastSeq"] = stream.LastSeq
		out.ReadModels["lag"] = stream.LastSeq - min(applied, stream.LastSeq)
	}

	if ws, err := h.cfg.Queues.Workers(ctx); err != nil {
		failed("the workers seen", err)
	} else {
		out.Workers = ws
	}

	out.Queues = part{"transcode": nil, "deliveries": nil}
	if n, err := h.cfg.Queues.JobsUnfinished(ctx, queue.TranscodeIntake); err != nil {
		failed("the transcode queue", err)
	} else {
		out.Queues["transcode"] = n
	}
	if n, err := h.cfg.Queues.DeliveriesQueued(ctx); err != nil {
		failed("the delivery queue", err)
	} else {
		out.Queues["deliveries"] = n
	}

	for _, c := range h.cfg.Host.Checks() {
		problem, detail := c.Run(ctx)
		if problem == "" {
			problem = "ok"
		} else {
			out.Status = "degraded"
			if detail != nil {
				log.Warn("admin health: check failed", "check", c.Name, "err", detail)
			}
		}
		out.Checks[c.Name] = problem
	}
	out.Media, out.Disk = out.Checks["media"], out.Checks["disk"]
	if len(out.Errors) > 0 {
		out.Status = "degraded"
	}
	respond.JSON(w, http.StatusOK, out)
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

// replay starts a rebuild of this node's read models (or, with
// {"verify": true}, a comparison of them with a rebuild) in the
// background: 202 {"id", ...}; 409 while one runs. The node keeps serving
// throughout (docs/operations.md). GET /v1/admin/replay follows it.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Replayer == nil {
		return domain.E("replay", domain.Unavailable, "rebuilding the read models is not available on this server")
	}
	var body struct {
		Verify bool `json:"verify"`
	}
	if r.ContentLength != 0 {
		if err := h.cfg.Host.Decode(w, r, &body); err != nil {
			return err
		}
	}
	rs := &h.replays
	rs.mu.Lock()
	if rs.last != nil && rs.last.State == "running" {
		id := rs.last.ID
		rs.mu.Unlock()
		return domain.E("replay", domain.Conflict, "replay %s is still running; follow it with GET /v1/admin/replay", id)
	}
	st := &replayStatus{ID: h.cfg.Store.NewID(), Verify: body.Verify, State: "running", StartedAt: domain.FormatTime(h.cfg.Now())}
	rs.last = st
	started := *st
	rs.mu.Unlock()

	log := h.cfg.Host.Logger(r).With("replay_id", st.ID, "verify", body.Verify)
	log.Info("replay requested over HTTP")
	go func() {
		res, err := h.cfg.Replayer.Replay(context.Background(), body.Verify, func(p ReplayProgress) {
			rs.update(func(st *replayStatus) { st.Events, st.Total, st.EventsPerSecond = p.Events, p.Total, p.EventsPerSecond })
		})
		rs.update(func(st *replayStatus) {
			end := domain.FormatTime(h.cfg.Now())
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
	respond.JSON(w, http.StatusAccepted, started)
	return nil
}

// replayStatusOf is the progress of the running replay, or the outcome
// of the last; {"state": "idle"} when none ran since this node started.
func (h *Handler) replayStatusOf(w http.ResponseWriter, r *http.Request) error {
	st, ok := h.replays.snapshot()
	if !ok {
		respond.JSON(w, http.StatusOK, map[string]string{"state": "idle"})
		return nil
	}
	respond.JSON(w, http.StatusOK, st)
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
