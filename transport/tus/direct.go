package tus

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
	"github.com/kino-video/kino/transport/wire"
)

// Direct upload URLs (POST /v1/uploads) let a browser on the customer's
// site upload one file with tus without holding an API key, as Mux direct
// uploads and Cloudflare direct creator uploads do. The URL carries a
// random token; the server keeps only its SHA-256, with the account, the
// collection, the future video's id and the expiry, in a KV bucket
// (kv.DirectUploads) that every API node reads, removed by the
// bucket's TTL.

// Bounds of a direct upload URL's life (expiresIn, seconds).
const (
	directDefault = time.Hour
	directMin     = time.Minute
	directMax     = 24 * time.Hour
)

// DirectOutstandingMax is how many unused, unexpired direct upload URLs
// an account may hold: enough for a busy site's open upload pages, not
// an unbounded pile of records in the bucket.
const DirectOutstandingMax = 100

// directRecord is a direct upload URL as stored.
type directRecord struct {
	Account    string    `json:"account"`
	Collection string    `json:"collection"`
	ID         string    `json:"id"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Used       bool      `json:"used"`
	// Settings are the request's playbackPolicy, download and details.
	Settings Settings `json:"settings"`
}

// DirectCORS is answered on the direct upload routes only: they are meant
// for browsers on any site, and carry their own credential (the token in
// the URL), never a cookie.
func DirectCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Location, Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, Retry-After, X-Request-Id")
}

// directPreflight answers a browser's CORS preflight (and tus discovery).
func (t *Handler) directPreflight(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	DirectCORS(h)
	h.Set("Access-Control-Allow-Methods", "POST, HEAD, PATCH, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Tus-Resumable, Upload-Length, Upload-Metadata, Upload-Offset, Upload-Checksum, Upload-Defer-Length, Upload-Concat, Content-Type, X-Requested-With, X-HTTP-Method-Override")
	h.Set("Access-Control-Max-Age", "86400")
	return t.tusOptions(w, r)
}

// createDirectUpload is POST /v1/uploads.
func (h *Handler) createDirectUpload(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Direct == nil || h.store == nil {
		return domain.E("direct upload", domain.Unavailable, "direct uploads are not enabled on this server")
	}
	var req struct {
		Collection     string   `json:"collection"`
		ExpiresIn      *int64   `json:"expiresIn"`
		PlaybackPolicy *string  `json:"playbackPolicy"`
		Download       *bool    `json:"download"`
		ThumbnailTime  *float64 `json:"thumbnailTime"`
		domain.Details
	}
	if err := h.host.Decode(w, r, &req); err != nil {
		return err
	}
	settings, err := h.host.Settings(req.PlaybackPolicy, nil)
	if err != nil {
		return err
	}
	settings.Download = req.Download
	if req.ThumbnailTime != nil {
		if err := domain.CheckThumbnailTime("direct upload", *req.ThumbnailTime); err != nil {
			return err
		}
		settings.ThumbnailTime = req.ThumbnailTime
	}
	// No filename yet: without a title the upload's filename gives it.
	if settings.Details, err = req.Details.Normalize("direct upload", ""); err != nil {
		return err
	}
	life := directDefault
	if req.ExpiresIn != nil {
		if *req.ExpiresIn < int64(directMin/time.Second) || *req.ExpiresIn > int64(directMax/time.Second) {
			return errBadRequest("expiresIn must be from %d to %d seconds (got %d)", int64(directMin/time.Second), int64(directMax/time.Second), *req.ExpiresIn)
		}
		life = time.Duration(*req.ExpiresIn) * time.Second
	}
	c := h.host.Caller(r)
	slug := strings.TrimSpace(req.Collection)
	if err := h.host.Collection(r.Context(), c.Account, slug); err != nil {
		return err
	}
	if err := h.host.Writable(); err != nil {
		return err
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := base64.RawURLEncoding.EncodeToString(raw)
	rec := directRecord{Account: c.Account, Collection: slug, ID: h.cfg.NewID(),
		ExpiresAt: h.cfg.Now().Add(life).UTC().Truncate(time.Second), Settings: settings}
	b, _ := json.Marshal(rec)
	ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
	defer cancel()
	if err := h.directOutstanding(ctx, c.Account, func(idx map[string]time.Time) error {
		if len(idx) >= DirectOutstandingMax {
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
		return h.host.StoreFailure(w, err)
	}
	if err := h.cfg.Direct.Create(ctx, directKey(token), b); err != nil {
		h.directUsed(rec.Account, rec.ID)
		return h.host.StoreFailure(w, err)
	}
	h.host.Logger(r).Info("direct upload URL issued", "video_id", rec.ID, "collection", rec.Collection, "expires_at", rec.ExpiresAt)
	respond.JSON(w, http.StatusCreated, wire.DirectUpload{ID: rec.ID, URL: h.host.PublicBase(r) + "/uploads/tus/direct/" + token,
		ExpiresAt: domain.FormatTime(rec.ExpiresAt)})
	return nil
}

// DirectIndexKey is the record, in the direct uploads' bucket, of an
// account's unused direct upload URLs: video id -> expiry. Token records
// are hex hashes, so the keys cannot collide.
func DirectIndexKey(account string) string { return "account." + account }

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
func (h *Handler) directOutstanding(ctx context.Context, account string, change func(map[string]time.Time) error) error {
	key := DirectIndexKey(account)
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
		b, rev, err := h.cfg.Direct.Get(ctx, key)
		switch {
		case domain.IsKind(err, domain.NotFound):
			rev = 0
		case err != nil:
			return err
		default:
			_ = json.Unmarshal(b, &idx) // unreadable: started afresh
		}
		now := h.cfg.Now()
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
			err = h.cfg.Direct.Create(ctx, key, b)
		} else {
			err = h.cfg.Direct.Update(ctx, key, b, rev)
		}
		if !domain.IsKind(err, domain.Conflict) {
			return err
		}
	}
	return domain.E("direct upload", domain.Unavailable, "too many direct upload URLs issued at once; retry")
}

// directUsed frees the place of a used direct upload URL in its account's
// index (best effort: an entry left behind goes when the URL expires).
func (h *Handler) directUsed(account, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := h.directOutstanding(ctx, account, func(idx map[string]time.Time) error {
		delete(idx, id)
		return nil
	}); err != nil {
		h.cfg.Log.Warn("free a used direct upload URL's place", "video_id", id, "err", err)
	}
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
func (h *Handler) directCreate(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Direct == nil {
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
	if err := h.host.GuardCredentials(w, r, func() error {
		if key == "" {
			return domain.E("direct upload", domain.BadCredentials, "this direct upload URL is unknown or has expired; ask for a new one")
		}
		b, rv, err := h.cfg.Direct.Get(r.Context(), key)
		if domain.IsKind(err, domain.NotFound) {
			return domain.E("direct upload", domain.BadCredentials, "this direct upload URL is unknown or has expired; ask for a new one")
		}
		if err != nil {
			return h.host.StoreFailure(w, err)
		}
		rev = rv
		return json.Unmarshal(b, &rec)
	}); err != nil {
		if domain.IsKind(err, domain.BadCredentials) {
			return errDirectUnknown()
		}
		return err
	}
	if !h.cfg.Now().Before(rec.ExpiresAt) {
		return domain.E("direct upload", domain.Gone, "this direct upload URL expired at %s; ask for a new one", domain.FormatTime(rec.ExpiresAt))
	}
	if rec.Used {
		return domain.E("direct upload", domain.Conflict, "this direct upload URL has already been used: it is good for one upload; resume that one at its Location, or ask for a new URL")
	}
	c, r, err := h.host.Admit(w, r, rec.Account, rec.ID)
	if err != nil {
		return err
	}
	err = h.createUpload(w, r, c, creation{id: rec.ID, collection: rec.Collection, direct: key, token: token, settings: &rec.Settings,
		claim: func(ctx context.Context) error {
			rec.Used = true
			b, _ := json.Marshal(rec)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
			defer cancel()
			err := h.cfg.Direct.Update(ctx, key, b, rev)
			if domain.IsKind(err, domain.Conflict) {
				return domain.E("direct upload", domain.Conflict, "this direct upload URL has already been used: it is good for one upload")
			}
			if err != nil {
				return h.host.StoreFailure(w, err)
			}
			return nil
		},
		unclaim: func() {
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			defer cancel()
			b, rv, err := h.cfg.Direct.Get(ctx, key)
			var cur directRecord
			if err == nil && json.Unmarshal(b, &cur) == nil && cur.Used {
				cur.Used = false
				b, _ = json.Marshal(cur)
				err = h.cfg.Direct.Update(ctx, key, b, rv)
			}
			if err != nil {
				h.cfg.Log.Warn("give a refused direct upload's URL back", "video_id", rec.ID, "err", err)
			}
		}})
	if _, ok := h.store.Get(rec.ID); ok || err == nil {
		h.directUsed(rec.Account, rec.ID) // the upload exists: the URL is used
	}
	return err
}

// directUpload adapts a tus handler to the upload of a direct upload URL:
// the token in the path stands for the account's key.
func (h *Handler) directUpload(handle func(http.ResponseWriter, *http.Request, tusTarget) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		vars := mux.Vars(r)
		key, id := directKey(vars["token"]), vars["id"]
		var u Upload
		if err := h.host.GuardCredentials(w, r, func() error {
			var ok bool
			if u, ok = h.store.Get(id); !ok {
				var d Done // finished: its completion record answers
				d, ok = h.store.Completed(id)
				u = Upload{Account: d.Account, Direct: d.Direct}
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
		c, r, err := h.host.Admit(w, r, u.Account, id)
		if err != nil {
			return err
		}
		return handle(w, r, tusTarget{c: c, id: id, direct: key})
	}
}
