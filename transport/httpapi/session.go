package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

// Identity is the person a session belongs to.
type Identity struct {
	UserID   string `json:"id"`
	Email    string `json:"email"`
	Account  string `json:"account"` // "" for an operator
	Operator bool   `json:"operator"`
}

// Cookie names: with Secure, the __Host- prefix makes browsers refuse one
// set by another host (a sibling subdomain) or without Secure and Path=/.
const (
	sessionCookie       = "kino_session"
	secureSessionCookie = "__Host-kino_session"
)

// secure reports whether the browser reached kino over HTTPS: the request
// came over TLS, or through a trusted proxy (TrustedProxies) saying so in
// X-Forwarded-Proto, or the public URL is https (a proxy in front of
// kino, however it is configured).
func (s *Server) secure(r *http.Request) bool {
	if r.TLS != nil || strings.HasPrefix(strings.ToLower(s.cfg.Origin.PublicURL), "https://") {
		return true
	}
	if len(s.cfg.Limits.TrustedProxies) == 0 || !inPrefixes(peerAddr(r.RemoteAddr), s.cfg.Limits.TrustedProxies) {
		return false
	}
	protos := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(protos[len(protos)-1]), "https") // the nearest proxy's
}

func (s *Server) cookieName(r *http.Request) string {
	if s.secure(r) {
		return secureSessionCookie
	}
	return sessionCookie
}

// sessionID is the request's session cookie ("" when it has none). Over
// HTTPS only the __Host- cookie counts.
func (s *Server) sessionID(r *http.Request) string {
	if s.cfg.Users == nil {
		return ""
	}
	c, err := r.Cookie(s.cookieName(r))
	if err != nil {
		return ""
	}
	return c.Value
}

func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(r), Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secure(r), MaxAge: int(s.cfg.Users.SessionMaxAge() / time.Second)})
}

func (s *Server) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(r), Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secure(r), MaxAge: -1})
}

func errLoginRequired(msg string) error { return domain.E("session", domain.LoginRequired, "%s", msg) }

// crossOrigin refuses (403) an unsafe request sent from another origin
// (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host,
// else allowed as a non-browser client).
func (s *Server) crossOrigin(r *http.Request) error {
	if err := s.cop.Check(r); err != nil {
		return domain.E("", domain.Denied, "Cross-origin request refused")
	}
	return nil
}

// session resolves the request's session cookie to its user. A session of
// a user removed since, or whose password changed since it began, is
// ended.
func (s *Server) session(r *http.Request) (Identity, error) {
	id := s.sessionID(r)
	if id == "" {
		return Identity{}, errLoginRequired("Log in first")
	}
	ctx := r.Context()
	sess, ok, err := s.cfg.Users.Session(ctx, id)
	if err != nil {
		return Identity{}, err
	}
	if !ok {
		return Identity{}, errLoginRequired("Your session has ended; log in again")
	}
	u, ok, err := s.cfg.DB.User(sess.UserID)
	if err != nil {
		return Identity{}, err
	}
	caughtUp := true
	if !ok || u.PasswordGen < sess.Gen {
		// A session begun a moment ago (a password just set) may be ahead
		// of the read models.
		if caughtUp = s.catchUp(ctx); caughtUp {
			if u, ok, err = s.cfg.DB.User(sess.UserID); err != nil {
				return Identity{}, err
			}
		}
	} else if waited, err := s.awaitUser(ctx, u.Email); err != nil {
		return Identity{}, err
	} else if waited {
		// A new password or a removal through another node, which this
		// node's read models did not hold when first read.
		if u, ok, err = s.cfg.DB.User(sess.UserID); err != nil {
			return Identity{}, err
		}
	}
	switch {
	case ok && u.PasswordGen < sess.Gen, !ok && !caughtUp:
		// The read models still lag (a node catching up, or rebuilding):
		// no reason to end the session, which every node shares.
		return Identity{}, errCatchingUp()
	case !ok || u.PasswordGen != sess.Gen:
		_ = s.cfg.Users.EndSession(context.WithoutCancel(ctx), id)
		return Identity{}, errLoginRequired("Your session has ended; log in again")
	}
	return Identity{UserID: u.ID, Email: u.Email, Account: u.Account, Operator: u.Operator}, nil
}

// awaitUser waits (at most 2 s) until the read models hold the last event
// of the user with this email, asked of the stream's leader, and reports
// whether it had to: a password changed or a user removed through another
// node ends its sessions here too, however far this node's read models
// lag. It answers Unavailable when they do not catch up in time.
func (s *Server) awaitUser(ctx context.Context, email string) (waited bool, err error) {
	last, err := s.cfg.Store.LastOf(ctx, domain.UserStream(email).Filter())
	if err != nil {
		loggerFrom(ctx, s.cfg.Log).Warn("user's last event", "err", err)
		return false, errCatchingUp()
	}
	if last <= s.cfg.Projector.Applied() {
		return false, nil
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if s.cfg.Projector.WaitFor(wctx, last) != nil {
		return true, errCatchingUp()
	}
	return true, nil
}

func errCatchingUp() error {
	return domain.E("session", domain.Unavailable, "The server is catching up; retry in a moment")
}

// Identify is the person logged in with the request's session cookie, for
// the dashboard's pages (which check cross-origin requests themselves:
// pages are GETs).
func (s *Server) Identify(r *http.Request) (Identity, bool) {
	if s.sessionID(r) == "" {
		return Identity{}, false
	}
	id, err := s.session(r)
	return id, err == nil
}

// accountSession authenticates a /v1 request by its session cookie: an
// account user's, through the cross-origin check.
func (s *Server) accountSession(r *http.Request) (Identity, error) {
	if err := s.crossOrigin(r); err != nil {
		return Identity{}, err
	}
	id, err := s.session(r)
	if err != nil {
		return Identity{}, err
	}
	if id.Operator || id.Account == "" {
		return Identity{}, domain.E("", domain.Denied, "An operator acts on accounts through /v1/admin")
	}
	return id, nil
}

// operatorOnly guards the /v1/admin routes: an operator's session, or
// kino's --admin-token as a Bearer value (wrong tokens count against the
// client address like wrong API keys). Without an admin token configured,
// a Bearer value finds no route (404).
func (s *Server) operatorOnly(h handlerFunc) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if r.Header.Get("Authorization") == "" && s.sessionID(r) != "" {
			if err := s.crossOrigin(r); err != nil {
				return err
			}
			operator := func() (Identity, error) {
				id, err := s.session(r)
				if err == nil && !id.Operator {
					err = domain.E("", domain.Denied, "This needs an operator's login")
				}
				return id, err
			}
			id, err := operator()
			if err != nil {
				return err
			}
			ctx := context.WithValue(r.Context(), ctxAccount, caller{User: id.UserID, Operator: true})
			ctx = withLog(ctx, s.cfg.Log, "user_id", id.UserID)
			// One of the writes waited for may have ended this session (a
			// password set from a link): look at it again once applied.
			if s.awaitOwnWrites(ctx, anyAccount, allWrites) {
				if _, err := operator(); err != nil {
					return err
				}
			}
			return h(w, r.WithContext(ctx))
		}
		if s.cfg.Admin.Token == "" && bearer(r) != "" {
			return errNotFound("route " + r.URL.Path)
		}
		if err := s.guardCredentials(w, r, func() error { return s.checkAdminToken(r) }); err != nil {
			return err
		}
		ctx := context.WithValue(r.Context(), ctxAccount, caller{Operator: true})
		s.awaitOwnWrites(ctx, anyAccount, allWrites)
		return h(w, r.WithContext(ctx))
	})
}

// loginLimit counts one login attempt against the client address and
// against the email tried (its user key, so unknown emails count alike),
// across API nodes (the shared ledger, keys login-addr: and login-user:).
func (s *Server) loginLimit(w http.ResponseWriter, r *http.Request, email string) error {
	now := s.cfg.Now()
	d := s.loginAddrs.Allow(clientAddr(r, s.cfg.Limits.TrustedProxies), s.cfg.Limits.LoginsPerAddress, now)
	if d.Allowed && email != "" {
		d = s.loginUsers.Allow(domain.UserKey(email), s.cfg.Limits.LoginsPerUser, now)
	}
	if d.Allowed {
		return nil
	}
	secs := retrySeconds(d.Retry)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return domain.E("log in", domain.RateLimited, "Too many login attempts; retry after %d seconds", secs)
}

// loginAnswer is the body of a successful login.
type loginAnswer struct {
	User     Identity `json:"user"`
	Redirect string   `json:"redirect"`
}

// startSession begins a session for u, sets its cookie, and answers.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u domain.User) error {
	id, _, err := s.cfg.Users.NewSession(context.WithoutCancel(r.Context()), u)
	if err != nil {
		return err
	}
	s.setSessionCookie(w, r, id)
	who := Identity{UserID: u.ID, Email: u.Email, Account: u.Account, Operator: u.Operator}
	redirect := "/"
	if u.Operator {
		redirect = "/admin"
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, loginAnswer{User: who, Redirect: redirect})
	return nil
}

func (s *Server) usersEnabled() error {
	if s.cfg.Users == nil {
		return domain.E("", domain.Unavailable, "Logins are not enabled on this server")
	}
	return nil
}

// POST /auth/login {"email","password"}
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if err := s.usersEnabled(); err != nil {
		return err
	}
	if err := s.crossOrigin(r); err != nil {
		return err
	}
	var body struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if err := s.loginLimit(w, r, domain.NormalizeEmail(body.Email)); err != nil {
		return err
	}
	u, err := s.cfg.Users.Authenticate(r.Context(), body.Email, body.Password)
	if err != nil {
		return err
	}
	logger(r, s.cfg.Log).Info("login", "user_id", u.ID)
	return s.startSession(w, r, u)
}

// POST /auth/logout
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.usersEnabled(); err != nil {
		return err
	}
	if err := s.crossOrigin(r); err != nil {
		return err
	}
	if id := s.sessionID(r); id != "" {
		if err := s.cfg.Users.EndSession(context.WithoutCancel(r.Context()), id); err != nil {
			return err
		}
	}
	s.clearSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// GET /auth/me
func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	if err := s.usersEnabled(); err != nil {
		return err
	}
	var id Identity
	check := func() (err error) {
		id, err = s.session(r)
		return err
	}
	// A cookie that names no live session counts against the address, as
	// on /v1: each costs a NATS lookup. No cookie at all costs nothing
	// (every logged-out page view asks).
	var err error
	if s.sessionID(r) == "" {
		err = check()
	} else {
		err = s.guardCredentials(w, r, check)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, id)
	return nil
}

// POST /auth/password {"token","password"}: sets the password through a
// one-time link and logs in.
func (s *Server) setPassword(w http.ResponseWriter, r *http.Request) error {
	const op = "set password"
	if err := s.usersEnabled(); err != nil {
		return err
	}
	if err := s.crossOrigin(r); err != nil {
		return err
	}
	var body struct {
		Token    string `json:"token"`
		Password string `json:"password"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if err := s.loginLimit(w, r, ""); err != nil {
		return err
	}
	if err := domain.CheckPassword(op, body.Password); err != nil {
		return err
	}
	hash := accounts.HashToken(body.Token)
	u, ok, err := s.cfg.DB.UserByLink(hash)
	if err == nil && !ok && s.catchUp(r.Context()) { // a link made a moment ago
		u, ok, err = s.cfg.DB.UserByLink(hash)
	}
	if err != nil {
		return err
	}
	if !ok {
		return domain.ErrBadLink(op)
	}
	res, err := s.cfg.Users.SetPassword(context.WithoutCancel(r.Context()), u.Email, body.Token, body.Password)
	if err != nil {
		return err
	}
	// So the new session finds its password generation; behind after a
	// timeout, the user's account's requests (an operator's: every
	// operator request) wait for it and look at their session again, so a
	// session made before the new password ends at once.
	s.settleFor(r, u.Account, res.LastSeq())
	logger(r, s.cfg.Log).Info("password set", "user_id", res.State.ID)
	return s.startSession(w, r, res.State)
}
