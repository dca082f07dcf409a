package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/kino-video/kino/domain"
)

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

// adminReplay rebuilds the read models online (or verifies them with
// {"verify": true}). It is for operators (operatorOnly): an operator's
// session, or kino's --admin-token, not an account's API key.
func (s *Server) adminReplay(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Admin == nil {
		return errNotFound("route " + r.URL.Path)
	}
	var body struct {
		Verify bool `json:"verify"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
	}
	logger(r, s.cfg.Log).Info("replay requested over HTTP", "verify", body.Verify)
	res, err := s.cfg.Admin.Replay(context.WithoutCancel(r.Context()), body.Verify)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
