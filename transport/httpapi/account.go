package httpapi

import (
	"net/http"
	"strconv"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

// accountUsage is GET /v1/account: the caller's plan, limits, what is
// left of its request window, its storage and its videos by status.
type accountUsage struct {
	Slug      string `json:"slug"`
	Plan      string `json:"plan"`
	CreatedAt string `json:"createdAt"`
	Limits    struct {
		RequestsPerMinute    int   `json:"requestsPerMinute"`
		MaxUploadBytes       int64 `json:"maxUploadBytes"`
		ConcurrentUploads    int   `json:"concurrentUploads"`
		MaxDurationSeconds   int64 `json:"maxDurationSeconds"`
		TranscodeConcurrency int   `json:"transcodeConcurrency"`
		StorageBytes         int64 `json:"storageBytes"` // the storage quota; 0: none
	} `json:"limits"`
	RateLimit struct {
		Limit     int   `json:"limit"`
		Remaining int   `json:"remaining"`
		Reset     int64 `json:"reset"`
	} `json:"rateLimit"`
	StorageBytes int64                 `json:"storageBytes"`
	Videos       map[domain.Status]int `json:"videos"`
}

// getAccount answers from the read models' per-account counters (one
// record, whatever the account holds). Its rateLimit is the API keys'
// budget: with a key, what this response's X-RateLimit-* headers say
// (authenticate set them when it counted this request), so reading it
// spends one request, not two; with a browser's session, which has a
// budget of its own, the keys' budget read without counting.
func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) error {
	c := callerOf(r)
	acct, ok, err := s.cfg.DB.Account(c.Account)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound("account")
	}
	u, err := s.cfg.DB.Usage(c.Account)
	if err != nil {
		return err
	}
	var out accountUsage
	out.Slug, out.Plan, out.CreatedAt = acct.Slug, string(acct.Plan), domain.FormatTime(acct.CreatedAt)
	out.Limits.RequestsPerMinute = c.Limits.RequestsPerMinute
	out.Limits.MaxUploadBytes = c.Limits.MaxUploadBytes
	out.Limits.ConcurrentUploads = c.Limits.ConcurrentUploads
	out.Limits.MaxDurationSeconds = int64(c.Limits.MaxDuration.Seconds())
	out.Limits.TranscodeConcurrency = c.Limits.TranscodeConcurrency
	out.Limits.StorageBytes = c.Limits.StorageBytes
	if c.User == "" {
		h := w.Header()
		out.RateLimit.Limit = headerInt(h, "X-RateLimit-Limit", c.Limits.RequestsPerMinute)
		out.RateLimit.Remaining = headerInt(h, "X-RateLimit-Remaining", 0)
		out.RateLimit.Reset = int64(headerInt(h, "X-RateLimit-Reset", 0))
	} else {
		// A browser has a budget of its own (rateBudget): it is told the
		// API keys' budget, as this node counts it, without spending it.
		d := s.limiter.Peek(c.Account, c.Limits.RequestsPerMinute, s.cfg.Now())
		out.RateLimit.Limit, out.RateLimit.Remaining = c.Limits.RequestsPerMinute, d.Remaining
		if d.Reset.IsZero() {
			d.Reset = s.cfg.Now()
		}
		out.RateLimit.Reset = ceilUnix(d.Reset)
	}
	out.StorageBytes, out.Videos = u.StorageBytes, u.Videos()
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// headerInt reads an integer header as authenticate spelled it.
func headerInt(h http.Header, name string, def int) int {
	v := h[name]
	if len(v) == 0 {
		v = h.Values(name)
	}
	if len(v) == 0 {
		return def
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return def
	}
	return n
}
