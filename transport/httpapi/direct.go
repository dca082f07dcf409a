package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/tus"
	"github.com/kino-video/kino/transport/wire"
)

// Direct upload URLs (POST /v1/uploads) let a browser on the customer's
// site upload one file with tus without holding an API key, as Mux direct
// uploads and Cloudflare direct creator uploads do. The URL carries a
// random token; the server keeps only its SHA-256, with the account, the
// collection, the future video's id and the expiry, in a KV bucket
// (kv.DirectUploads) that every API node reads, removed by the
// bucket's TTL.

// DirectUploadStore keeps direct upload records by key (the token's hash).
// Create fails with a Conflict when the key exists; Get with NotFound when
// it does not; Update with a Conflict when the record changed since rev.
type DirectUploadStore interface {
	Create(ctx context.Context, key string, val []byte) error
	Get(ctx context.Context, key string) ([]byte, uint64, error)
	Update(ctx context.Context, key string, val []byte, rev uint64) error
}

// Bounds of a direct upload URL's life (expiresIn, seconds).
const (
	directDefault = time.Hour
	directMin     = time.Minute
	directMax     = 24 * time.Hour
)

// directRequestsPerMinute is the budget of the requests on one direct
// upload URL and its upload: its own, never the account's (a URL is in
// the hands of an untrusted end user), generous enough for any tus
// client's chunks and retries.
const directRequestsPerMinute = 600

// directOutstandingMax is how many unused, unexpired direct upload URLs
// an account may hold: enough for a busy site's open upload pages, not
// an unbounded pile of records in the bucket.
const directOutstandingMax = 100

// directRecord is a direct upload URL as stored.
type directRecord struct {
	Account    string    `json:"account"`
	Collection string    `json:"collection"`
	ID         string    `json:"id"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Used       bool      `json:"used"`
	// Settings are the request's playbackPolicy and download.
	Settings uploadSettings `json:"settings"`
}

// directCORS is answered on the direct upload routes only: they are meant
// for browsers on any site, and carry their own credential (the token in
// the URL), never a cookie.
func directCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Location, Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, Retry-After, X-Request-Id")
}

// directPreflight answers a browser's CORS preflight (and tus discovery).
func (s *Server) directPreflight(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	directCORS(h)
	h.Set("Access-Control-Allow-Methods", "POST, HEAD, PATCH, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Tus-Resumable, Upload-Length, Upload-Metadata, Upload-Offset, Upload-Checksum, Upload-Defer-Length, Upload-Concat, Content-Type, X-Requested-With, X-HTTP-Method-Override")
	h.Set("Access-Control-Max-Age", "86400")
	return s.tusOptions(w, r)
}

// createDirectUpload is POST /v1/uploads.
func (s *Server) createDirectUpload(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Uploads.Direct == nil || s.tus == nil {
		return domain.E("direct upload", domain.Unavailable, "direct uploads are not enabled on this server")
	}
	var req struct {
		Collection     string  `json:"collection"`
		ExpiresIn      *int64  `json:"expiresIn"`
		PlaybackPolicy *string `json:"playbackPolicy"`
		Download       *bool   `json:"download"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	settings := uploadSettings{Download: req.Download}
	if err := parseSettings(&settings, req.PlaybackPolicy, nil); err != nil {
		return err
	}
	life := directDefault
	if req.ExpiresIn != nil {
		if *req.ExpiresIn < int64(directMin/time.Second) || *req.ExpiresIn > int64(directMax/time.Second) {
			return errBadRequest("expiresIn must be from %d to %d seconds (got %d)", int64(directMin/time.Second), int64(directMax/time.Second), *req.ExpiresIn)
		}
		life = time.Duration(*req.ExpiresIn) * time.Second
	}
	c := callerOf(r)
	coll, err := s.uploadCollection(r.Context(), c.Account, strings.TrimSpace(req.Collection))
	if err != nil {
		return err
	}
	if err := s.writableNow(); err != nil {
		return err
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := base64.RawURLEncoding.EncodeToString(raw)
	rec := directRecord{Account: c.Account, Collection: coll.Slug, ID: s.cfg.Store.NewID(),
		ExpiresAt: s.cfg.Now().Add(life).UTC().Truncate(time.Second), Settings: settings}
	b, _ := json.Marshal(rec)
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if err := s.directOutstanding(ctx, c.Account, func(idx map[string]time.Time) error {
		if len(idx) >= directOutstandingMax {
			w.Header().Set("Retry-After", "60")
			return domain.E("direct upload", domain.RateLimited,
				"your account holds %d unused direct upload URLs, the most it may: one is freed when it is used or expires", len(idx))
		}
		idx[rec.ID] = rec.ExpiresAt
		return nil
	}); err != nil {
		if k := domain.KindOf(err); k == domain.RateLimited || k == domain.Unavailable { // over the cap, or a busy index
			return err
		}
		return storeFailure(w, err)
	}
	if err := s.cfg.Uploads.Direct.Create(ctx, directKey(token), b); err != nil {
		s.directUsed(rec.Account, rec.ID)
		return storeFailure(w, err)
	}
	logger(r, s.cfg.Log).Info("direct upload URL issued", "video_id", rec.ID, "collection", rec.Collection, "expires_at", rec.ExpiresAt)
	respond.JSON(w, http.StatusCreated, wire.DirectUpload{ID: rec.ID, URL: s.publicBase(r) + "/uploads/tus/direct/" + token,
		ExpiresAt: domain.FormatTime(rec.ExpiresAt)})
	return nil
}

// directIndexKey is the record, in the direct uploads' bucket, of an
// account's unused direct upload URLs: video id -> expiry. Token records
// are hex hashes, so the keys cannot collide.
func directIndexKey(account string) string { return "account." + account }

// directIndexPatience bounds how long a change of an account's index of
// unused direct upload URLs retries when other changes keep winning the
// compare-and-set (URLs issued or used at once on a busy account).
const directIndexPatience = 2 * time.Second

// directOutstanding changes (with change) the account's index of unused
// direct upload URLs, expired ones left out, by compare-and-set: one
// read and one write of a small record, whatever the number of URLs. A
// change that loses the race reads and tries again after a short random
// wait (growing up to 100 ms), for at most directIndexPatience: without
// the wait, dozens issued at once kept colliding, and gave up with 503.
func (s *Server) directOutstanding(ctx context.Context, account string, change func(map[string]time.Time) error) error {
	key := directIndexKey(account)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if time.Since(start) >= directIndexPatience {
				break
			}
			backoff := min(5*time.Millisecond<<min(attempt, 5), 100*time.Millisecond)
			t := time.NewTimer(mrand.N(backoff) + time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return domain.E("direct upload", domain.Unavailable, "too many direct upload URLs issued at once; retry")
			}
		}
		idx := make(map[string]time.Time)
		b, rev, err := s.cfg.Uploads.Direct.Get(ctx, key)
		switch {
		case domain.IsKind(err, domain.NotFound):
			rev = 0
		case err != nil:
			return err
		default:
			_ = json.Unmarshal(b, &idx) // unreadable: started afresh
		}
		now := s.cfg.Now()
		for id, exp := range idx {
			if !now.Before(exp) {
				delete(idx, id)
			}
		}
		if err := change(idx); err != nil {
			return err
		}
		b, _ = json.Marshal(idx)
		if rev == 0 {
			err = s.cfg.Uploads.Direct.Create(ctx, key, b)
		} else {
			err = s.cfg.Uploads.Direct.Update(ctx, key, b, rev)
		}
		if !domain.IsKind(err, domain.Conflict) {
			return err
		}
	}
	return domain.E("direct upload", domain.Unavailable, "too many direct upload URLs issued at once; retry")
}

// directUsed frees the place of a used direct upload URL in its account's
// index (best effort: an entry left behind goes when the URL expires).
func (s *Server) directUsed(account, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := s.directOutstanding(ctx, account, func(idx map[string]time.Time) error {
		delete(idx, id)
		return nil
	}); err != nil {
		s.cfg.Log.Warn("free a used direct upload URL's place", "video_id", id, "err", err)
	}
}

// publicBase is the API's public base (ending in /v1): the configured
// one, else the request's own host.
func (s *Server) publicBase(r *http.Request) string {
	if s.cfg.Origin.BaseURL != "" {
		return s.cfg.Origin.BaseURL
	}
	return s.origin(r) + "/v1"
}

// directKey is the record key of a token: its SHA-256 in hex. A token
// that is not one kino could have issued gets no key (and no lookup).
func directKey(token string) string {
	if b, err := base64.RawURLEncoding.DecodeString(token); err != nil || len(b) != 32 {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// errDirectUnknown is the answer to a token that was never issued (or
// whose record the TTL has removed).
func errDirectUnknown() error {
	return domain.E("direct upload", domain.NotFound, "this direct upload URL is unknown or has expired; ask for a new one")
}

// directCreate is the tus creation POST on a direct upload URL: no
// Authorization, once.
func (s *Server) directCreate(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Uploads.Direct == nil {
		return domain.E("direct upload", domain.Unavailable, "direct uploads are not enabled on this server")
	}
	token := mux.Vars(r)["token"]
	key := directKey(token)
	var (
		rec directRecord
		rev uint64
	)
	// Unknown tokens count against the client's address, as wrong API
	// keys do, so tokens cannot be guessed quickly.
	if err := s.guardCredentials(w, r, func() error {
		if key == "" {
			return domain.E("direct upload", domain.BadCredentials, "this direct upload URL is unknown or has expired; ask for a new one")
		}
		b, rv, err := s.cfg.Uploads.Direct.Get(r.Context(), key)
		if domain.IsKind(err, domain.NotFound) {
			return domain.E("direct upload", domain.BadCredentials, "this direct upload URL is unknown or has expired; ask for a new one")
		}
		if err != nil {
			return storeFailure(w, err)
		}
		rev = rv
		return json.Unmarshal(b, &rec)
	}); err != nil {
		if domain.IsKind(err, domain.BadCredentials) {
			return errDirectUnknown()
		}
		return err
	}
	if !s.cfg.Now().Before(rec.ExpiresAt) {
		return domain.E("direct upload", domain.Gone, "this direct upload URL expired at %s; ask for a new one", domain.FormatTime(rec.ExpiresAt))
	}
	if rec.Used {
		return domain.E("direct upload", domain.Conflict, "this direct upload URL has already been used: it is good for one upload; resume that one at its Location, or ask for a new URL")
	}
	c, r, err := s.admitAccount(w, r, rec.Account, rec.ID)
	if err != nil {
		return err
	}
	err = s.createUpload(w, r, c, creation{id: rec.ID, collection: rec.Collection, direct: key, token: token, settings: &rec.Settings,
		claim: func(ctx context.Context) error {
			rec.Used = true
			b, _ := json.Marshal(rec)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
			defer cancel()
			err := s.cfg.Uploads.Direct.Update(ctx, key, b, rev)
			if domain.IsKind(err, domain.Conflict) {
				return domain.E("direct upload", domain.Conflict, "this direct upload URL has already been used: it is good for one upload")
			}
			if err != nil {
				return storeFailure(w, err)
			}
			return nil
		},
		unclaim: func() {
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			defer cancel()
			b, rv, err := s.cfg.Uploads.Direct.Get(ctx, key)
			var cur directRecord
			if err == nil && json.Unmarshal(b, &cur) == nil && cur.Used {
				cur.Used = false
				b, _ = json.Marshal(cur)
				err = s.cfg.Uploads.Direct.Update(ctx, key, b, rv)
			}
			if err != nil {
				s.cfg.Log.Warn("give a refused direct upload's URL back", "video_id", rec.ID, "err", err)
			}
		}})
	if _, ok := s.tus.Get(rec.ID); ok || err == nil {
		s.directUsed(rec.Account, rec.ID) // the upload exists: the URL is used
	}
	return err
}

// directUpload adapts a tus handler to the upload of a direct upload URL:
// the token in the path stands for the account's key.
func (s *Server) directUpload(h func(http.ResponseWriter, *http.Request, tusTarget) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		vars := mux.Vars(r)
		key, id := directKey(vars["token"]), vars["id"]
		var u tus.Upload
		if err := s.guardCredentials(w, r, func() error {
			var ok bool
			if u, ok = s.tus.Get(id); !ok {
				var d tus.Done // finished: its completion record answers
				d, ok = s.tus.Completed(id)
				u = tus.Upload{Account: d.Account, Direct: d.Direct}
			}
			if key == "" || !ok || !domain.ValidID(id) || u.Direct != key {
				return domain.E("direct upload", domain.BadCredentials, "upload not found")
			}
			return nil
		}); err != nil {
			if domain.IsKind(err, domain.BadCredentials) {
				return errNotFound("upload")
			}
			return err
		}
		c, r, err := s.admitAccount(w, r, u.Account, id)
		if err != nil {
			return err
		}
		return h(w, r, tusTarget{c: c, id: id, direct: key})
	}
}

// admitAccount makes a request on a direct upload URL (of video id) the
// account's: its plan's limits, and the URL's own rate budget (the
// X-RateLimit-* headers as on every authenticated request). The budget is
// the URL's, never the account's: its holder is an end user, who must not
// be able to lock the account out of its API.
func (s *Server) admitAccount(w http.ResponseWriter, r *http.Request, slug, id string) (caller, *http.Request, error) {
	acct, ok, err := s.cfg.DB.Account(slug)
	if err == nil && !ok {
		err = errNotFound("upload")
	}
	if err != nil {
		return caller{}, r, err
	}
	limits := s.cfg.Plans.Limits(acct.Plan)
	// Slugs never hold a colon: "direct:" keys collide with no account's
	// budget, nor a user's.
	if err := s.charge(w, "direct:"+id, directRequestsPerMinute, "this direct upload URL"); err != nil {
		return caller{}, r, err
	}
	c := caller{Account: acct.Slug, Plan: acct.Plan, Limits: limits}
	return c, withCaller(r, s.cfg.Log, c), nil
}

// redactPath is a request path fit for logs: a direct upload URL's token
// is a credential.
func redactPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/v1/uploads/tus/direct/")
	if !ok {
		return p
	}
	if _, id, ok := strings.Cut(rest, "/"); ok {
		return "/v1/uploads/tus/direct/REDACTED/" + id
	}
	return "/v1/uploads/tus/direct/REDACTED"
}
