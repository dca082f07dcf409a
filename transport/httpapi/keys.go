package httpapi

import (
	"crypto/rand"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

// API keys of the caller's account, managed from the dashboard: these
// routes take an account user's session, never an API key (a leaked key
// must not be able to mint more, nor revoke the others). The operator
// manages any account's keys under /v1/admin/accounts/{slug}/keys
// (package admin).

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
func sessionOnly(r *http.Request) error {
	if callerOf(r).User == "" {
		return domain.E("", domain.Denied, "API keys are managed in the dashboard")
	}
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	if err := sessionOnly(r); err != nil {
		return err
	}
	return s.listAccountKeys(w, r, callerOf(r).Account)
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	if err := sessionOnly(r); err != nil {
		return err
	}
	return s.createAccountKey(w, r, callerOf(r).Account)
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := sessionOnly(r); err != nil {
		return err
	}
	return s.revokeAccountKey(w, r, callerOf(r).Account, mux.Vars(r)["id"])
}

// listAccountKeys answers {"data": [...]} with account's live keys, oldest
// first, with when each was last used (to the minute; null: never).
func (s *Server) listAccountKeys(w http.ResponseWriter, r *http.Request, account string) error {
	keys, err := s.cfg.DB.Keys(account)
	if err != nil {
		return err
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	used := map[string]string{}
	if s.cfg.Users != nil {
		at, err := s.cfg.Users.KeyLastUsed(r.Context(), ids)
		if err != nil {
			return err
		}
		for id, t := range at {
			used[id] = domain.FormatTime(t)
		}
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
func (s *Server) createAccountKey(w http.ResponseWriter, r *http.Request, account string) error {
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
	id := s.cfg.Store.NewID()
	prefix := key[:len(domain.KeyPrefix)+4]
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(account),
		domain.IssueKey{KeyID: id, Hash: domain.HashKey(key), Prefix: prefix, Label: body.Label})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("key issued", "key_id", id, "account", account)
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusCreated, newKeyView{ID: id, Key: key, Prefix: prefix, Label: body.Label,
		CreatedAt: domain.FormatTime(res.Events[0].OccurredAt)})
	return nil
}

// revokeAccountKey revokes key id of account; a key of another account is
// not found (404).
func (s *Server) revokeAccountKey(w http.ResponseWriter, r *http.Request, account, id string) error {
	keys, err := s.cfg.DB.Keys(account)
	if err != nil {
		return err
	}
	found := false
	for _, k := range keys {
		found = found || k.ID == id
	}
	if !found {
		return errNotFound("key")
	}
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(account), domain.RevokeKey{KeyID: id})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("key revoked", "key_id", id, "account", account)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
