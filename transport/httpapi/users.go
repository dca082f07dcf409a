package httpapi

import (
	"net/http"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

// The operator's user endpoints (operatorOnly).

// userView is a user as the operator sees it: never a hash.
type userView struct {
	ID          string `json:"id"`
	Email       string `json:"email"`
	Account     string `json:"account"` // "" for an operator
	Operator    bool   `json:"operator"`
	CreatedAt   string `json:"createdAt"`
	PasswordSet bool   `json:"passwordSet"`
}

func renderUser(u projections.User) userView {
	return userView{ID: u.ID, Email: u.Email, Account: u.Account, Operator: u.Operator,
		CreatedAt: domain.FormatTime(u.CreatedAt), PasswordSet: u.PasswordSet}
}

// GET /v1/admin/users[?account=slug]
func (s *Server) adminListUsers(w http.ResponseWriter, r *http.Request) error {
	users, err := s.cfg.DB.Users(r.URL.Query().Get("account"))
	if err != nil {
		return err
	}
	out := make([]userView, len(users))
	for i, u := range users {
		out[i] = renderUser(u)
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, map[string]any{"data": out})
	return nil
}

// POST /v1/admin/users {"email","account"} or {"email","operator":true}:
// 201 with the user and its one-time set-password link.
func (s *Server) adminCreateUser(w http.ResponseWriter, r *http.Request) error {
	if err := s.usersEnabled(); err != nil {
		return err
	}
	var body struct {
		Email    string `json:"email"`
		Account  string `json:"account"`
		Operator bool   `json:"operator"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.Operator == (body.Account != "") {
		return errBadRequest("give either an account or \"operator\": true")
	}
	res, token, err := s.cfg.Users.CreateUser(r.Context(), accounts.NewUser{Email: body.Email, Account: body.Account, Operator: body.Operator})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	u := res.State
	logger(r, s.cfg.Log).Info("user created", "user_id", u.ID, "account", u.Account, "operator", u.Operator)
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusCreated, map[string]any{
		"user": userView{ID: u.ID, Email: u.Email, Account: u.Account, Operator: u.Operator, CreatedAt: domain.FormatTime(u.CreatedAt)},
		"link": s.publicSite(r) + "/password?token=" + token,
	})
	return nil
}

// publicSite is the site's public URL, or, without one configured, the
// request's own scheme and host.
func (s *Server) publicSite(r *http.Request) string {
	if s.cfg.Origin.PublicURL != "" {
		return s.cfg.Origin.PublicURL
	}
	return s.origin(r)
}
