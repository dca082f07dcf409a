package httpapi

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
)

// caller is the authenticated account of a request.
type caller struct {
	Account string
	Plan    domain.Plan
	Limits  domain.Limits
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

// authenticate resolves the API key to its account and applies the
// account's rate limit. Every authenticated response carries the
// X-RateLimit-* headers.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		key := bearer(r)
		if key == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kino"`)
			return errMissingKey()
		}
		k, ok, err := s.lookupKey(r.Context(), key)
		if err != nil {
			return err
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="kino", error="invalid_token"`)
			return errInvalidKey()
		}
		acct, ok, err := s.cfg.DB.Account(k.Account)
		if err != nil {
			return err
		}
		if !ok { // a key always follows its account in the stream
			return errInvalidKey()
		}
		limits := s.cfg.Plans.Limits(acct.Plan)
		remaining, reset, allowed := s.limiter.allow(acct.Slug, limits.RequestsPerMinute, s.cfg.Now())
		h := w.Header()
		// Spelled as the spec spells them: Header.Set would canonicalise
		// "RateLimit" to "Ratelimit". Header lookups stay case-insensitive.
		h["X-RateLimit-Limit"] = []string{strconv.Itoa(limits.RequestsPerMinute)}
		h["X-RateLimit-Remaining"] = []string{strconv.Itoa(remaining)}
		h["X-RateLimit-Reset"] = []string{strconv.FormatInt(reset.Unix(), 10)}
		if !allowed {
			wait := max(1, min(60, int(reset.Sub(s.cfg.Now()).Seconds()+0.999)))
			h.Set("Retry-After", strconv.Itoa(wait))
			return &apiError{http.StatusTooManyRequests, labelRateLimited,
				"Too many requests; your plan allows " + strconv.Itoa(limits.RequestsPerMinute) +
					" per minute; retry after " + strconv.Itoa(wait) + " seconds"}
		}
		c := caller{Account: acct.Slug, Plan: acct.Plan, Limits: limits}
		ctx := context.WithValue(r.Context(), ctxAccount, c)
		ctx = context.WithValue(ctx, ctxLog, logger(r, s.cfg.Log).With("account", acct.Slug))
		next.ServeHTTP(w, r.WithContext(ctx))
		return nil
	})
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

// lookupKey finds a live key by its hash. A key issued a moment ago (by the
// CLI, say) may not be in the read models yet, so a miss waits once for
// them to catch up with the stream before it counts as invalid.
func (s *Server) lookupKey(ctx context.Context, key string) (projections.Key, bool, error) {
	if !domain.WellFormedKey(key) {
		return projections.Key{}, false, nil
	}
	hash := domain.HashKey(key)
	k, ok, err := s.cfg.DB.KeyByHash(hash)
	if err != nil || ok {
		return k, ok && subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) == 1, err
	}
	if !s.catchUp(ctx) {
		return k, false, nil
	}
	k, ok, err = s.cfg.DB.KeyByHash(hash)
	return k, ok && subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) == 1, err
}
