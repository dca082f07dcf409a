package httpapi

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/ratelimit"
)

// caller is the authenticated account of a request.
type caller struct {
	Account  string
	Plan     domain.Plan
	Limits   domain.Limits
	User     string // the logged-in user's id; "" for an API key
	Operator bool   // an operator (on /v1/admin only)
}

func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(ctxAccount).(caller)
	return c
}

// bearer extracts the key of "Authorization: Bearer <key>".
func bearer(r *http.Request) string {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

// guardCredentials runs check, which verifies the request's credentials,
// under the per-address limit on requests without valid ones: an address
// over the limit is refused (429) before check runs, so a right guess is
// refused too, and a check that finds no or wrong credentials counts
// against the address.
func (s *Server) guardCredentials(w http.ResponseWriter, r *http.Request, check func() error) error {
	addr := clientAddr(r, s.cfg.Limits.TrustedProxies)
	if over, wait := s.failures.Over(addr, s.cfg.Limits.AuthFailuresPerMinute, s.cfg.Now()); over {
		return tooManyFailures(w, wait)
	}
	err := check()
	if k := domain.KindOf(err); k == domain.Unauthenticated || k == domain.BadCredentials || k == domain.LoginRequired {
		if d := s.failures.Allow(addr, s.cfg.Limits.AuthFailuresPerMinute, s.cfg.Now()); !d.Allowed {
			return tooManyFailures(w, d.Retry)
		}
	}
	return err
}

// authenticate resolves the API key to its account and applies the
// account's rate limit. Every authenticated response carries the
// X-RateLimit-* headers. Requests without a valid key (missing or wrong)
// count against their client address instead: once it has sent
// AuthFailuresPerMinute of them in a minute, its requests are refused with
// 429 before any key is looked at, so keys cannot be guessed quickly.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.authenticateAfter(allWrites, next)
}

// authenticateAfter is authenticate, waiting for which of the account's
// own pending writes (awaitOwnWrites) before next runs.
func (s *Server) authenticateAfter(which awaiting, next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		var acct projections.Account
		var user string
		resolve := func() error {
			if r.Header.Get("Authorization") == "" && s.sessionID(r) != "" {
				// A browser: the session of an account user, the same account's
				// limits and handlers, with a rate budget of its own
				// (rateBudget). Unknown or ended sessions count against
				// the address like wrong keys (each costs a NATS request).
				return s.guardCredentials(w, r, func() error {
					id, err := s.accountSession(r)
					if err != nil {
						return err
					}
					var ok bool
					if acct, ok, err = s.cfg.DB.Account(id.Account); err != nil {
						return err
					} else if !ok {
						return errLoginRequired("Your session has ended; log in again")
					}
					user = id.UserID
					return nil
				})
			}
			return s.guardCredentials(w, r, func() (err error) {
				var k projections.Key
				if acct, k, err = s.account(w, r); err == nil && s.cfg.Users != nil {
					s.cfg.Users.KeyUsed(k.ID, s.cfg.Now())
				}
				return err
			})
		}
		if err := resolve(); err != nil {
			return err
		}
		// When the account's own writes were not applied yet, one of them
		// may have revoked this very key (its settle timed out): look at
		// the credentials again once they are.
		if s.awaitOwnWrites(r.Context(), acct.Slug, which) {
			if err := resolve(); err != nil {
				return err
			}
		}
		limits := acct.Limits(s.cfg.Plans)
		rateKey, perMinute := rateBudget(acct.Slug, user, limits)
		if err := s.charge(w, rateKey, perMinute, "your plan"); err != nil {
			return err
		}
		r = withCaller(r, s.cfg.Log, caller{Account: acct.Slug, Plan: acct.Plan, Limits: limits, User: user})
		next.ServeHTTP(w, r)
		return nil
	})
}

// account is the account of the request's API key, and the key.
func (s *Server) account(w http.ResponseWriter, r *http.Request) (projections.Account, projections.Key, error) {
	key := bearer(r)
	if key == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kino"`)
		return projections.Account{}, projections.Key{}, errMissingKey()
	}
	k, acct, ok, err := s.lookupKey(r.Context(), key)
	if err != nil {
		return projections.Account{}, k, err
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="kino", error="invalid_token"`)
		return projections.Account{}, k, errInvalidKey()
	}
	return acct, k, nil
}

// tooManyFailures refuses a client address that sent too many requests
// without a valid key.
func tooManyFailures(w http.ResponseWriter, wait time.Duration) error {
	secs := retrySeconds(wait)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return domain.E("authenticate", domain.RateLimited,
		"Too many requests without a valid API key from your address; retry after %d seconds", secs)
}

// retrySeconds is a wait as whole seconds for Retry-After: rounded up, 1 to 60.
func retrySeconds(d time.Duration) int {
	return max(1, min(60, int((d+time.Second-1)/time.Second)))
}

// ceilUnix is t in Unix seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// catchUp waits (at most 2 s) until the read models include every event
// stored when it was called, and reports whether they do. The stream's last
// sequence is asked at most every 100 ms, so misses (unknown keys, say)
// cannot turn into a flood of NATS requests.
func (s *Server) catchUp(ctx context.Context) bool {
	last, err := s.lastSeq.get(ctx, s.cfg.Store.LastSeq)
	if err != nil {
		loggerFrom(ctx, s.cfg.Log).Warn("stream last sequence", "err", err)
		return false
	}
	// The cached sequence may predate a write this server has answered
	// since (an upload whose page is opened at once): wait for that too.
	last = max(last, s.own.pending(anyAccount, s.cfg.Projector.Applied(), allWrites))
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return s.cfg.Projector.WaitFor(wctx, last) == nil
}

// lastSeqCache remembers the stream's last sequence for a short while.
type lastSeqCache struct {
	mu      sync.Mutex
	seq     uint64
	fetched time.Time
}

func (c *lastSeqCache) get(ctx context.Context, fetch func(context.Context) (uint64, error)) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.fetched) < 100*time.Millisecond {
		return c.seq, nil
	}
	seq, err := fetch(ctx)
	if err != nil {
		return 0, err
	}
	c.seq, c.fetched = seq, time.Now()
	return seq, nil
}

// lookupKey finds a live key by its hash, with its account. A key issued a
// moment ago (by the CLI, say) may not be in the read models yet, so a
// miss waits once for them to catch up with the stream before it counts
// as invalid.
func (s *Server) lookupKey(ctx context.Context, key string) (projections.Key, projections.Account, bool, error) {
	if !domain.WellFormedKey(key) {
		return projections.Key{}, projections.Account{}, false, nil
	}
	hash := domain.HashKey(key)
	k, acct, ok, err := s.cfg.DB.Authenticate(hash)
	if err == nil && !ok && s.catchUp(ctx) {
		k, acct, ok, err = s.cfg.DB.Authenticate(hash)
	}
	ok = ok && subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) == 1
	return k, acct, ok, err
}

// SessionRequestsPerMinute is the least a dashboard user's browser may send
// in any minute (the plan's rate when that is higher).
const SessionRequestsPerMinute = 300

// rateBudget names the budget a request is counted against: an API key's
// the account's (every key of it shares the plan's rate), a logged-in
// user's browser its own, so that a dashboard left open (each page view is
// a few requests, and a list with videos in progress polls every 2 s)
// never spends what the account's integrations need, and a busy
// integration never locks its people out of the dashboard. Keys cannot
// collide: slugs never hold a colon.
func rateBudget(account, user string, l domain.Limits) (key string, perMinute int) {
	if user == "" {
		return account, l.RequestsPerMinute
	}
	return "user:" + user, max(l.RequestsPerMinute, SessionRequestsPerMinute)
}

// A budget is a rate limit one request is charged to: a key of the
// limiter, its requests per minute, and whose it is (in the refusal).
type budget struct {
	key       string
	perMinute int
	whose     string
}

// charge counts one request against key's budget of perMinute, setting the
// X-RateLimit-* headers, and refuses it (429, Retry-After) when over.
func (s *Server) charge(w http.ResponseWriter, key string, perMinute int, whose string) error {
	return s.chargeAll(w, budget{key, perMinute, whose})
}

// chargeAll counts one request against each budget in turn, stopping at
// the first that refuses it; the X-RateLimit-* headers tell the tightest
// budget (the refusing one, else the one with the fewest requests left).
func (s *Server) chargeAll(w http.ResponseWriter, budgets ...budget) error {
	now := s.cfg.Now()
	var tight ratelimit.Decision
	var whose budget
	for i, b := range budgets {
		d := s.limiter.Allow(b.key, b.perMinute, now)
		if i == 0 || !d.Allowed || d.Remaining < tight.Remaining {
			tight, whose = d, b
		}
		if !d.Allowed {
			break
		}
	}
	h := w.Header()
	// Spelled as the spec spells them: Header.Set would canonicalise
	// "RateLimit" to "Ratelimit". Header lookups stay case-insensitive.
	h["X-RateLimit-Limit"] = []string{strconv.Itoa(whose.perMinute)}
	h["X-RateLimit-Remaining"] = []string{strconv.Itoa(tight.Remaining)}
	h["X-RateLimit-Reset"] = []string{strconv.FormatInt(ceilUnix(tight.Reset), 10)}
	if !tight.Allowed {
		wait := retrySeconds(tight.Retry)
		h.Set("Retry-After", strconv.Itoa(wait))
		return domain.E("authenticate", domain.RateLimited,
			"Too many requests; %s allows %d per minute; retry after %d seconds", whose.whose, whose.perMinute, wait)
	}
	return nil
}

// withCaller is r carrying its caller, and a logger naming the account.
func withCaller(r *http.Request, fallback *slog.Logger, c caller) *http.Request {
	ctx := context.WithValue(r.Context(), ctxAccount, c)
	return r.WithContext(withLog(ctx, fallback, "account", c.Account))
}
