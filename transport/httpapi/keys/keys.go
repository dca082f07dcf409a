package keys

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/wire"
)

// Host is what the key endpoints use of the API server.
type Host interface {
	// Account is the authenticated caller's account.
	Account(r *http.Request) string
	// User is the caller's user when it came with a session ("" with an
	// API key).
	User(r *http.Request) string
	// Execute runs cmd on account's stream and waits until the read
	// models include it.
	Execute(r *http.Request, account string, cmd any) (eventstore.Result[domain.Account], error)
	Decode(w http.ResponseWriter, r *http.Request, v any) error
	Logger(r *http.Request) *slog.Logger
	NewID() string
	// KeyLastUsed is when each of the keys was last used, to the minute
	// (none: never, or unknown).
	KeyLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error)
}

// DB reads an account's keys (projections.DB).
type DB interface {
	Keys(account string) ([]projections.Key, error)
	SigningKeys(account string) ([]projections.SigningKey, error)
	SigningKey(account, id string) (projections.SigningKey, bool, error)
}

// Config wires the key endpoints.
type Config struct {
	Host Host
	DB   DB
}

// Handler serves /v1/keys and /v1/signing-keys.
type Handler struct{ cfg Config }

// New prepares the endpoints.
func New(cfg Config) *Handler { return &Handler{cfg: cfg} }

// Routes mounts the endpoints with route, which authenticates the caller.
func (h *Handler) Routes(route func(path string, fn func(http.ResponseWriter, *http.Request) error, method string)) {
	route("/keys", h.listKeys, http.MethodGet)
	route("/keys", h.createKey, http.MethodPost)
	route("/keys/{id}", h.revokeKey, http.MethodDelete)
	route("/signing-keys", h.createSigningKey, http.MethodPost)
	route("/signing-keys", h.listSigningKeys, http.MethodGet)
	route("/signing-keys/{id}", h.deleteSigningKey, http.MethodDelete)
}

func notFound(what string) error {
	return domain.E("", domain.NotFound, "%s not found", what)
}

// keyView is one key as GET /v1/keys lists it: never the key, nor its hash.
type keyView struct {
	ID         string  `json:"id"`
	Prefix     string  `json:"prefix"`
	Label      string  `json:"label"`
	CreatedAt  string  `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
}

// newKeyView is the answer to a key's creation: the only time the key is shown.
type newKeyView struct {
	ID        string `json:"id"`
	Key       string `json:"key"`
	Prefix    string `json:"prefix"`
	Label     string `json:"label"`
	CreatedAt string `json:"createdAt"`
}

// sessionOnly refuses API keys on key management.
func (h *Handler) sessionOnly(r *http.Request) error {
	if h.cfg.Host.User(r) == "" {
		return domain.E("", domain.Denied, "API keys are managed in the dashboard")
	}
	return nil
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request) error {
	if err := h.sessionOnly(r); err != nil {
		return err
	}
	return h.listAccountKeys(w, r, h.cfg.Host.Account(r))
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) error {
	if err := h.sessionOnly(r); err != nil {
		return err
	}
	return h.createAccountKey(w, r, h.cfg.Host.Account(r))
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := h.sessionOnly(r); err != nil {
		return err
	}
	return h.revokeAccountKey(w, r, h.cfg.Host.Account(r), mux.Vars(r)["id"])
}

// listAccountKeys answers {"data": [...]} with account's live keys, oldest
// first, with when each was last used (to the minute; null: never).
func (h *Handler) listAccountKeys(w http.ResponseWriter, r *http.Request, account string) error {
	keys, err := h.cfg.DB.Keys(account)
	if err != nil {
		return err
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	used := map[string]string{}
	at, err := h.cfg.Host.KeyLastUsed(r.Context(), ids)
	if err != nil {
		return err
	}
	for id, t := range at {
		used[id] = domain.FormatTime(t)
	}
	out := make([]keyView, len(keys))
	for i, k := range keys {
		out[i] = keyView{ID: k.ID, Prefix: k.Prefix, Label: k.Label, CreatedAt: domain.FormatTime(k.CreatedAt)}
		if t, ok := used[k.ID]; ok {
			out[i].LastUsedAt = &t
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, map[string]any{"data": out})
	return nil
}

// createAccountKey issues a key for account ({"label"} optional) and
// shows it, once.
func (h *Handler) createAccountKey(w http.ResponseWriter, r *http.Request, account string) error {
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
	id := h.cfg.Host.NewID()
	prefix := key[:len(domain.KeyPrefix)+4]
	res, err := h.cfg.Host.Execute(r, account,
		domain.IssueKey{KeyID: id, Hash: domain.HashKey(key), Prefix: prefix, Label: body.Label})
	if err != nil {
		return err
	}
	h.cfg.Host.Logger(r).Info("key issued", "key_id", id, "account", account)
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusCreated, newKeyView{ID: id, Key: key, Prefix: prefix, Label: body.Label,
		CreatedAt: domain.FormatTime(res.Events[0].OccurredAt)})
	return nil
}

// revokeAccountKey revokes key id of account; a key of another account is
// not found (404).
func (h *Handler) revokeAccountKey(w http.ResponseWriter, r *http.Request, account, id string) error {
	keys, err := h.cfg.DB.Keys(account)
	if err != nil {
		return err
	}
	found := false
	for _, k := range keys {
		found = found || k.ID == id
	}
	if !found {
		return notFound("key")
	}
	if _, err := h.cfg.Host.Execute(r, account, domain.RevokeKey{KeyID: id}); err != nil {
		return err
	}
	h.cfg.Host.Logger(r).Info("key revoked", "key_id", id, "account", account)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Signing keys of the caller's account (API key or session): the public
// halves kino checks playback tokens an account's backend signs with.

func (h *Handler) createSigningKey(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Label string `json:"label"`
	}
	if r.ContentLength != 0 {
		if err := h.cfg.Host.Decode(w, r, &body); err != nil {
			return err
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	acct := h.cfg.Host.Account(r)
	id := h.cfg.Host.NewID()
	res, err := h.cfg.Host.Execute(r, acct,
		domain.CreateSigningKey{KeyID: id, PublicKey: base64.RawURLEncoding.EncodeToString(pub), Label: body.Label})
	if err != nil {
		return err
	}
	h.cfg.Host.Logger(r).Info("signing key created", "signing_key_id", id, "account", acct)
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusCreated, wire.CreatedSigningKey{ID: id, Algorithm: domain.SigningAlgorithm,
		Label: strings.TrimSpace(body.Label), CreatedAt: domain.FormatTime(res.Events[0].OccurredAt),
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))})
	return nil
}

func (h *Handler) listSigningKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := h.cfg.DB.SigningKeys(h.cfg.Host.Account(r))
	if err != nil {
		return err
	}
	out := make([]wire.SigningKey, len(keys))
	for i, k := range keys {
		out[i] = wire.SigningKey{ID: k.ID, Algorithm: k.Algorithm, Label: k.Label, CreatedAt: domain.FormatTime(k.CreatedAt)}
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, wire.SigningKeys{SigningKeys: out})
	return nil
}

func (h *Handler) deleteSigningKey(w http.ResponseWriter, r *http.Request) error {
	acct, id := h.cfg.Host.Account(r), mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return notFound("signing key")
	}
	if _, ok, err := h.cfg.DB.SigningKey(acct, id); err != nil {
		return err
	} else if !ok {
		return notFound("signing key")
	}
	if _, err := h.cfg.Host.Execute(r, acct, domain.DeleteSigningKey{KeyID: id}); err != nil {
		return err
	}
	h.cfg.Host.Logger(r).Info("signing key deleted", "signing_key_id", id, "account", acct)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
