package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/tus"
)

// tus 1.0 resumable uploads (https://tus.io/protocols/resumable-upload),
// with the creation, creation-with-upload, termination, expiration and
// checksum extensions. tusd's handler (pkg/handler/unrouted_handler.go)
// was the reference for the protocol's edge cases.
//
// An upload becomes a video: its id is the video's, and its last byte
// goes through acceptUpload, exactly as a multipart POST /v1/videos.
// Every check a multipart upload meets is made as early as tus allows:
// the plan's size, the type (from the filename's extension) and the
// collection at creation (from Upload-Length and Upload-Metadata), the
// contents once the first bytes are in, the collection again at the end.
const (
	// tusSweepEvery is how often expired partial uploads are removed.
	tusSweepEvery = 5 * time.Minute

	// tusRetryEvery is how often kino tries again to accept the pending
	// uploads (complete, not yet videos) while the event store takes
	// writes.
	tusRetryEvery = 5 * time.Second

	// tusTakeoverWait bounds how long a PATCH or DELETE waits for the
	// request it interrupts to let the upload go (it may be accepting
	// the video, past its body).
	tusTakeoverWait = 10 * time.Second
)

// uploadStore keeps this node's unfinished tus uploads (tus.FileStore):
// their records and bytes, the completion records of finished ones, and
// which request holds each.
type uploadStore interface {
	Create(u tus.Upload) error
	Get(id string) (tus.Upload, bool)
	Save(u tus.Upload) error
	Remove(id string) error
	// DataPath is the file of an upload's bytes, on the media store's
	// file system.
	DataPath(id string) string
	// Reopen makes a pending upload one byte short again, for a PATCH of
	// that byte; CommitFile gives a complete upload's bytes a second name
	// for the media store's Commit.
	Reopen(u tus.Upload) (tus.Upload, error)
	CommitFile(id string) (string, error)
	Complete(u tus.Upload, expires time.Time) error
	Completed(id string) (tus.Done, bool)
	Forget(id string) error

	Lock(id string) bool
	Unlock(id string)
	Takeover(ctx context.Context, id string, wait time.Duration) bool
	Interruptible(id string, interrupt func())

	Usage(account string, direct bool) int
	Unfinished(account string, now time.Time) []tus.Upload
	PendingIDs() []string
	Expired(now time.Time) []string
	ExpiredDone(now time.Time) []string
}

var _ uploadStore = (*tus.FileStore)(nil)

// tusTarget is who asks about which upload: an account (with its API
// key), or the holder of a direct upload URL (direct: its token's hash).
type tusTarget struct {
	c      caller
	id     string
	direct string
}

// tusProtocol sets Tus-Resumable on every answer and refuses (412) a
// request of another protocol version. OPTIONS needs no version.
func (s *Server) tusProtocol(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Tus-Resumable", tus.Version)
		if r.Method != http.MethodOptions && r.Header.Get("Tus-Resumable") != tus.Version {
			w.Header().Set("Tus-Version", tus.Version)
			return domain.E("tus", domain.PreconditionFailed,
				"this is a tus %s server: send the header Tus-Resumable: %s", tus.Version, tus.Version)
		}
		if s.tus == nil {
			return domain.E("tus", domain.Unavailable, "resumable uploads are not enabled on this server")
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// tusOptions answers tus's discovery request.
func (s *Server) tusOptions(w http.ResponseWriter, _ *http.Request) error {
	h := w.Header()
	h.Set("Tus-Resumable", tus.Version)
	h.Set("Tus-Version", tus.Version)
	h.Set("Tus-Extension", tus.Extensions)
	h.Set("Tus-Checksum-Algorithm", tus.Checksums)
	var largest int64
	for _, l := range s.cfg.Plans {
		largest = max(largest, l.MaxUploadBytes)
	}
	h.Set("Tus-Max-Size", strconv.FormatInt(largest, 10))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) tusCreate(w http.ResponseWriter, r *http.Request) error {
	return s.createUpload(w, r, callerOf(r), creation{})
}

func (s *Server) tusHead(w http.ResponseWriter, r *http.Request) error {
	return s.headUpload(w, r, tusTarget{c: callerOf(r), id: mux.Vars(r)["id"]})
}

func (s *Server) tusPatch(w http.ResponseWriter, r *http.Request) error {
	return s.patchUpload(w, r, tusTarget{c: callerOf(r), id: mux.Vars(r)["id"]})
}

func (s *Server) tusDelete(w http.ResponseWriter, r *http.Request) error {
	return s.deleteUpload(w, r, tusTarget{c: callerOf(r), id: mux.Vars(r)["id"]})
}

// creation is what a direct upload URL fixes of the upload it creates.
type creation struct {
	id, collection, direct, token string
	settings                      *uploadSettings                 // a direct upload's playbackPolicy and download, fixed by its issuer
	claim                         func(ctx context.Context) error // marks the URL used, just before the upload is created
	unclaim                       func()                          // marks it unused again: the creation was refused
}

// maxUnfinished is how many unfinished tus uploads an account may hold
// on a node: twice the uploads its plan may run at once, so a client can
// keep a few files going, but an account cannot fill the disk with
// partial uploads it never finishes.
func maxUnfinished(l domain.Limits) int { return max(2, 2*l.ConcurrentUploads) }

// createUpload is tus's creation (and creation-with-upload).
func (s *Server) createUpload(w http.ResponseWriter, r *http.Request, c caller, cr creation) error {
	if r.Header.Get("Upload-Defer-Length") != "" || r.Header.Get("Upload-Concat") != "" {
		return errBadRequest("Upload-Defer-Length and Upload-Concat are not supported: send Upload-Length")
	}
	raw := r.Header.Get("Upload-Length")
	length, err := strconv.ParseInt(raw, 10, 64)
	if raw == "" || err != nil || length < 0 {
		return errBadRequest("Upload-Length must be the size of the file in bytes (got %q)", raw)
	}
	if length == 0 {
		return errBadRequest("file is empty")
	}
	if length > c.Limits.MaxUploadBytes {
		w.Header().Set("Connection", "close")
		return domain.E("upload video", domain.TooLarge, "upload is %d bytes; your plan allows files of at most %d bytes", length, c.Limits.MaxUploadBytes)
	}
	metaRaw := r.Header.Get("Upload-Metadata")
	meta, err := tus.ParseMetadata(metaRaw)
	if err != nil {
		return err
	}
	filename := domain.DisplayFilename(meta["filename"])
	if filename == "" {
		return errBadRequest("Upload-Metadata must carry filename (base64), the name of the video file")
	}
	if err := domain.CheckFilename(filename); err != nil {
		return err
	}
	ext, err := domain.Extension(filename)
	if err != nil {
		return err
	}
	slug := strings.TrimSpace(meta["collection"])
	if cr.collection != "" {
		if slug != "" && slug != cr.collection {
			return errBadRequest("this direct upload URL uploads into collection %q; leave collection out of Upload-Metadata or send that one", cr.collection)
		}
		slug = cr.collection
	}
	if slug == "" {
		return errBadRequest("collection is required: send the collection slug (base64) in Upload-Metadata")
	}
	settings, err := metaSettings(meta)
	if err != nil {
		return err
	}
	if cr.settings != nil {
		// The URL's holder (a browser) must not make a signed video public.
		if settings != (uploadSettings{}) {
			return errBadRequest("this direct upload URL's playbackPolicy and download are set by whoever asked for it (POST /v1/uploads); leave them out of Upload-Metadata")
		}
		settings = *cr.settings
	}
	if _, err := s.uploadCollection(r.Context(), c.Account, slug); err != nil {
		return err
	}
	if err := s.writableNow(); err != nil {
		return err
	}
	// Uploads through direct upload URLs are counted apart, under a cap
	// of their own (as many as the unused URLs an account may hold): the
	// URLs' holders must not lock the account out of its own uploads.
	n := s.tus.Usage(c.Account, cr.direct != "")
	if most := maxUnfinished(c.Limits); cr.direct == "" && n >= most {
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return domain.E("upload video", domain.RateLimited,
			"your account has %d unfinished resumable uploads, the most it may hold: finish or DELETE one first (GET /v1/uploads lists them; unfinished uploads expire %s after their last bytes)", n, s.cfg.Uploads.TusExpiry)
	}
	if cr.direct != "" && n >= directOutstandingMax {
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return domain.E("upload video", domain.RateLimited,
			"the account has %d unfinished direct uploads, the most it may hold: retry once one has finished or expired", n)
	}
	// Its own length only: what other uploads (of other accounts) may
	// still send is not held against it, or one account's announced but
	// unsent bytes would refuse everyone else. The disk is still guarded
	// where it is filled: every chunk is written above the reserve
	// (diskspace.Writer), as a multipart upload is, and an account's unsent
	// bytes are bounded by its own plan (maxUnfinished uploads of at most
	// MaxUploadBytes each).
	if err := s.checkRoom(length); err != nil {
		return err
	}
	withBody := hasBody(r)
	if withBody {
		if err := tusContentType(r); err != nil {
			return err
		}
		// The slot first: an upload created and then refused a slot
		// would be left behind, unknown to the client.
		release, err := s.uploads.acquire(w, uploadPool(tus.Upload{Account: c.Account, Direct: cr.direct}), c.Limits.ConcurrentUploads)
		if err != nil {
			w.Header().Set("Connection", "close")
			return err
		}
		defer release()
	}
	if cr.claim != nil {
		if err := cr.claim(r.Context()); err != nil {
			return err
		}
	}
	id := cr.id
	if id == "" {
		id = s.cfg.Store.NewID()
	}
	if withBody { // held from before the upload exists: no PATCH can slip in
		if !s.tus.Lock(id) {
			return domain.E("upload video", domain.Conflict, "the upload is busy")
		}
		defer s.tus.Unlock(id)
	}
	now := s.cfg.Now()
	u := tus.Upload{ID: id, Account: c.Account, Collection: slug, Filename: filename, Ext: ext,
		Length: length, MaxSize: c.Limits.MaxUploadBytes, Metadata: metaRaw, Direct: cr.direct, Settings: settings,
		Created: now.UTC(), Expires: s.tusExpires(now, now)}
	if err := s.tus.Create(u); err != nil {
		return storeFailure(w, err)
	}
	logger(r, s.cfg.Log).Info("resumable upload created", "video_id", id, "bytes", length, "collection", slug, "direct", cr.direct != "")
	w.Header().Set("Location", s.tusLocation(id, cr.token))
	if withBody {
		if u, err = s.writeChunk(w, r, u); err != nil {
			if cur, ok := s.tus.Get(id); ok && cur.Pending() {
				// Every byte is in, but the video could not be stored:
				// the upload is made and kept, and its client, told the
				// offset of the last byte, sends that again (or kino
				// accepts it by itself once the stores are back).
				logger(r, s.cfg.Log).Warn("resumable upload created complete but not accepted yet", "video_id", id, "err", err)
				u, err = cur, nil
			}
		}
		if err != nil {
			if !interrupted(err) {
				// Refused (not a video, a bad checksum...): the client
				// learns it now, and there is no upload to go on with.
				if _, ok := s.tus.Get(id); ok {
					_ = s.tus.Remove(id)
				}
				w.Header().Del("Location")
				if cr.unclaim != nil { // no upload came of it: the URL is not spent
					cr.unclaim()
				}
				if domain.KindOf(err) == domain.ChecksumMismatch {
					return domain.E("upload video", domain.ChecksumMismatch,
						"the body does not match its Upload-Checksum; the upload was not created: create it again")
				}
				return err
			}
			// The body broke off: the client resumes from Upload-Offset.
		}
	}
	w.Header().Set("Upload-Offset", strconv.FormatInt(u.ResumeOffset(), 10))
	w.Header().Set("Upload-Expires", u.Expires.Format(http.TimeFormat))
	w.WriteHeader(http.StatusCreated)
	return nil
}

// tusLocation is an upload's URL: absolute under the configured public
// base, else a path (clients resolve it against the creation URL, so it
// is right behind any proxy).
func (s *Server) tusLocation(id, token string) string {
	base := s.cfg.Origin.BaseURL
	if base == "" {
		base = "/v1"
	}
	if token != "" {
		return base + "/uploads/tus/direct/" + token + "/" + id
	}
	return base + "/uploads/tus/" + id
}

// findUpload is the target's upload: 404 when it does not exist or is
// not the caller's (never 403), 410 once it has expired (and then it is
// removed).
func (s *Server) findUpload(t tusTarget) (tus.Upload, error) {
	u, ok := s.tus.Get(t.id)
	if !ok {
		return s.findCompleted(t)
	}
	if !ok || !domain.ValidID(t.id) || u.Account != t.c.Account ||
		t.direct != "" && subtle.ConstantTimeCompare([]byte(u.Direct), []byte(t.direct)) != 1 {
		return tus.Upload{}, errNotFound("upload")
	}
	if now := s.cfg.Now(); !now.Before(u.Expires) {
		if s.tus.Lock(u.ID) {
			_ = s.tus.Remove(u.ID)
			s.tus.Unlock(u.ID)
		}
		return tus.Upload{}, domain.E("upload video", domain.Gone,
			"this upload expired at %s (%s after its last bytes arrived, or %s after it was created) and was removed; start a new one", u.Expires.Format(time.RFC3339), s.cfg.Uploads.TusExpiry, tusMaxAge(s.cfg.Uploads.TusExpiry))
	}
	return u, nil
}

// findCompleted is the target's finished upload, from its completion
// record: complete (Offset == Length), for its owner only.
func (s *Server) findCompleted(t tusTarget) (tus.Upload, error) {
	d, ok := s.tus.Completed(t.id)
	if !ok || !domain.ValidID(t.id) || d.Account != t.c.Account ||
		subtle.ConstantTimeCompare([]byte(d.Direct), []byte(t.direct)) != 1 || !s.cfg.Now().Before(d.Expires) {
		return tus.Upload{}, errNotFound("upload")
	}
	return tus.Upload{ID: d.ID, Account: d.Account, Direct: d.Direct, Length: d.Length, Offset: d.Length,
		Metadata: d.Metadata, Expires: d.Expires, Finished: true}, nil
}

func (s *Server) headUpload(w http.ResponseWriter, _ *http.Request, t tusTarget) error {
	u, err := s.findUpload(t)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Upload-Offset", strconv.FormatInt(u.ResumeOffset(), 10))
	h.Set("Upload-Length", strconv.FormatInt(u.Length, 10))
	h.Set("Upload-Expires", u.Expires.Format(http.TimeFormat))
	if u.Metadata != "" {
		h.Set("Upload-Metadata", u.Metadata)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) patchUpload(w http.ResponseWriter, r *http.Request, t tusTarget) error {
	found, err := s.findUpload(t)
	if err != nil {
		return err
	}
	if err := tusContentType(r); err != nil {
		return err
	}
	raw := r.Header.Get("Upload-Offset")
	offset, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || offset < 0 {
		return errBadRequest("Upload-Offset must be the offset in bytes this chunk starts at (got %q)", raw)
	}
	if found.Finished {
		return patchDone(w, r, found, offset)
	}
	// A PATCH still in flight is one the client has given up on (a dead
	// connection not yet noticed): this one takes over, as tusd's does,
	// if it resumes from where that one started (where HEAD says the
	// upload resumes). At another offset it is a stray, not a resumption:
	// it is refused without interrupting anything.
	if !resumesAt(found, offset) {
		return errOffset(w, offset, found)
	}
	if !s.tus.Takeover(r.Context(), t.id, tusTakeoverWait) {
		w.Header().Set("Connection", "close") // the body is not read
		return domain.E("upload video", domain.Conflict, "another request is writing to this upload; retry once it has ended")
	}
	defer s.tus.Unlock(t.id)
	u, err := s.findUpload(t) // again, now that it is ours
	if err != nil {
		return err
	}
	if u.Finished { // the request we waited for was its last chunk
		return patchDone(w, r, u, offset)
	}
	if !resumesAt(u, offset) {
		return errOffset(w, offset, u)
	}
	if err := s.writableNow(); err != nil {
		w.Header().Set("Connection", "close")
		return err
	}
	if u.Pending() {
		// A try whose answer was lost may have made the video after all:
		// then the upload is complete, and its bytes, which may be linked
		// to the video's original, are not written again.
		switch ok, err := s.uploadAccepted(r.Context(), u); {
		case err != nil:
			return err
		case ok:
			s.completeUpload(logger(r, s.cfg.Log).With("video_id", u.ID), u)
			return patchDone(w, r, u, offset)
		}
		if offset == u.Length {
			// No byte is missing: the acceptance is tried again (a body
			// would go past the length: 413).
			if !hasBody(r) {
				if err := s.finishUpload(r.Context(), u); err != nil {
					return storeFailureOr(w, err)
				}
			}
			return patchDone(w, r, u, offset)
		}
	}
	release, err := s.uploads.acquire(w, uploadPool(u), t.c.Limits.ConcurrentUploads)
	if err != nil {
		w.Header().Set("Connection", "close")
		return err
	}
	defer release()
	if u.Pending() { // its last byte again: the acceptance is tried again
		if u, err = s.tus.Reopen(u); err != nil {
			return storeFailure(w, err)
		}
	}
	u, err = s.writeChunk(w, r, u)
	if err != nil {
		return err
	}
	w.Header().Set("Upload-Offset", strconv.FormatInt(u.Offset, 10))
	w.Header().Set("Upload-Expires", u.Expires.Format(http.TimeFormat))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// resumesAt reports whether a PATCH of upload u at offset resumes it:
// at the offset HEAD answers, or, for a pending upload, also at its
// length without a body (a client that sent every byte asks for the
// acceptance again).
func resumesAt(u tus.Upload, offset int64) bool {
	return offset == u.ResumeOffset() || u.Pending() && offset == u.Length
}

// hasBody reports whether r carries a body.
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// errOffset refuses a PATCH at offset, which is not where upload u
// resumes.
func errOffset(w http.ResponseWriter, offset int64, u tus.Upload) error {
	w.Header().Set("Connection", "close")
	return domain.E("upload video", domain.Conflict, "Upload-Offset is %d but the upload has %d bytes: send HEAD to learn the offset, and resume from it", offset, u.ResumeOffset())
}

// patchDone answers a PATCH of a finished upload u: at its length, a
// no-op (as tusd answers); elsewhere 409.
func patchDone(w http.ResponseWriter, r *http.Request, u tus.Upload, offset int64) error {
	switch {
	case offset != u.Length:
		w.Header().Set("Connection", "close")
		return domain.E("upload video", domain.Conflict, "Upload-Offset is %d but the upload is complete, with %d bytes: it is video %s", offset, u.Length, u.ID)
	case hasBody(r):
		w.Header().Set("Connection", "close")
		return domain.E("upload video", domain.RequestTooLarge, "the upload is complete (%d bytes): a chunk would go past Upload-Length", u.Length)
	}
	w.Header().Set("Upload-Offset", strconv.FormatInt(u.Length, 10))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func errUploadComplete(u tus.Upload) error {
	return domain.E("upload video", domain.Conflict, "the upload is complete: it is video %s (DELETE /v1/videos/%s removes it)", u.ID, u.ID)
}

func (s *Server) deleteUpload(w http.ResponseWriter, r *http.Request, t tusTarget) error {
	if u, err := s.findUpload(t); err != nil {
		return err
	} else if u.Finished {
		return errUploadComplete(u)
	}
	if !s.tus.Takeover(r.Context(), t.id, tusTakeoverWait) {
		return domain.E("upload video", domain.Conflict, "a PATCH of this upload is in progress; retry once it has ended")
	}
	defer s.tus.Unlock(t.id)
	// Again, now that it is ours: the PATCH we waited for may have been
	// its last chunk, and then there is a video, not an upload, here.
	if u, err := s.findUpload(t); err != nil {
		return err
	} else if u.Finished {
		return errUploadComplete(u)
	}
	if err := s.tus.Remove(t.id); err != nil {
		return domain.Wrap("delete upload", domain.Internal, err, "")
	}
	logger(r, s.cfg.Log).Info("resumable upload terminated", "video_id", t.id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func tusContentType(r *http.Request) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != tus.ContentType {
		return domain.E("upload video", domain.Unsupported, "a tus PATCH carries Content-Type: %s", tus.ContentType)
	}
	return nil
}

// errInterrupted marks a chunk that broke off (a body that stopped or
// ended early): the bytes received are kept, the client resumes.
type errInterrupted struct{ error }

func (e errInterrupted) Unwrap() error { return e.error }

func interrupted(err error) bool {
	var e errInterrupted
	return errors.As(err, &e)
}

// writeChunk appends the request's body to upload u (whose lock the
// caller holds) and records the new offset; at the last byte it accepts
// the upload as a video. It returns the upload as recorded.
func (s *Server) writeChunk(w http.ResponseWriter, r *http.Request, u tus.Upload) (tus.Upload, error) {
	remaining := u.Length - u.Offset
	if r.ContentLength > remaining {
		w.Header().Set("Connection", "close")
		return u, domain.E("upload video", domain.RequestTooLarge, "the chunk of %d bytes goes past Upload-Length (%d bytes are left to send)", r.ContentLength, remaining)
	}
	sum, err := tus.ParseChecksum(r.Header.Get("Upload-Checksum"))
	if err != nil {
		w.Header().Set("Connection", "close")
		return u, err
	}
	f, err := os.OpenFile(s.tus.DataPath(u.ID), os.O_WRONLY, 0)
	if err != nil {
		return u, storeFailure(w, err)
	}
	defer f.Close()
	// Bytes past the recorded offset (a crash in the middle of a PATCH)
	// were never acknowledged: they go.
	if err := f.Truncate(u.Offset); err != nil {
		return u, storeFailure(w, err)
	}
	if _, err := f.Seek(u.Offset, io.SeekStart); err != nil {
		return u, storeFailure(w, err)
	}
	body := newIdleBody(w, r, s.cfg.Uploads.IdleTimeout, s.cfg.Now)
	defer body.done()
	s.tus.Interruptible(u.ID, body.interrupt)
	var dst io.Writer = &diskspace.Writer{W: f, Guard: s.disk, Wrap: wrapStoreError}
	if sum != nil {
		dst = io.MultiWriter(dst, sum)
	}
	n, err := io.CopyBuffer(dst, io.LimitReader(body, remaining+1), make([]byte, uploadBuffer))
	body.done() // past the body: a takeover waits for the rest, never cuts it
	discard := func() { _ = f.Truncate(u.Offset) }
	var serr *storeError
	switch {
	case n > remaining:
		discard()
		w.Header().Set("Connection", "close")
		return u, domain.E("upload video", domain.RequestTooLarge, "the chunk goes past Upload-Length (%d bytes were left to send); nothing of it was kept", remaining)
	case errors.Is(err, diskspace.ErrNoRoom), errors.As(err, &serr):
		discard()
		return u, storeFailure(w, err)
	case err != nil && sum != nil:
		discard() // a chunk with a checksum is kept whole or not at all
		return u, errInterrupted{tusBodyError(w, body, err, false)}
	case err == nil && sum != nil && !sum.Matches():
		discard()
		return u, domain.E("upload video", domain.ChecksumMismatch, "the chunk does not match its Upload-Checksum (%s); it was discarded: send it again", sum.Algorithm)
	}
	readErr := err
	if err := f.Close(); err != nil {
		return u, storeFailure(w, err)
	}
	u.Offset += n
	if n > 0 { // only bytes move the expiry: an empty PATCH keeps nothing alive
		u.Expires = s.tusExpires(u.Created, s.cfg.Now())
	}
	if !u.Sniffed && (u.Offset >= ffmpeg.SniffLen || u.Offset == u.Length) {
		if err := s.sniffUpload(u); err != nil {
			_ = s.tus.Remove(u.ID)
			logger(r, s.cfg.Log).Info("resumable upload refused: not a video", "video_id", u.ID)
			return u, err
		}
		u.Sniffed = true
	}
	if err := s.tus.Save(u); err != nil {
		return u, storeFailure(w, err)
	}
	if readErr != nil {
		return u, errInterrupted{tusBodyError(w, body, readErr, true)}
	}
	if u.Offset < u.Length {
		return u, nil
	}
	if err := s.finishUpload(r.Context(), u); err != nil {
		return u, storeFailureOr(w, err)
	}
	u.Finished = true
	return u, nil
}

// tusBodyError is bodyError for a tus chunk. A body ended for being idle
// or too slow answers 503 with Retry-After: 1, not the 408 of a multipart
// upload: tus clients retry 5xx but no 4xx except 409 and 423 (tus-js-
// client's default), and a tus upload has something to resume (tusd
// answers its read timeout with a 5xx too, 500). kept says whether the
// chunk's bytes were kept.
func tusBodyError(w http.ResponseWriter, body *idleBody, err error, kept bool) error {
	if errors.Is(err, errTakenOver) || !body.slow && !body.timedOut {
		return body.bodyError(w, err)
	}
	why := "no data arrived for " + body.idle.String()
	if body.slow {
		why = fmt.Sprintf("the chunk arrived slower than %d bytes a second over %s", uploadMinRate, uploadRateWindow)
	}
	what := "the bytes that arrived are kept"
	if !kept {
		what = "nothing of this chunk was kept (it carries Upload-Checksum)"
	}
	w.Header().Set("Connection", "close")
	w.Header().Set("Retry-After", "1")
	return domain.Wrap("upload video", domain.Unavailable, err,
		why+" and the request was ended; "+what+": send HEAD and resume from its Upload-Offset")
}

// sniffUpload refuses (415) an upload whose first bytes are not a video,
// as sniffVideo does for a multipart upload.
func (s *Server) sniffUpload(u tus.Upload) error {
	f, err := os.Open(s.tus.DataPath(u.ID))
	if err != nil {
		return domain.Wrap("upload video", domain.Internal, err, "")
	}
	defer f.Close()
	_, err = sniffVideo(io.LimitReader(f, ffmpeg.SniffLen))
	return err
}

// SweepUploads looks after this node's tus uploads until ctx ends: it
// removes the expired ones now and every few minutes, and tries again to
// accept the pending ones now and every few seconds (finishPending).
// kino serve runs it.
func (s *Server) SweepUploads(ctx context.Context) {
	if s.tus == nil {
		return
	}
	sweep := time.NewTicker(tusSweepEvery)
	defer sweep.Stop()
	retry := time.NewTicker(s.tusRetryEvery)
	defer retry.Stop()
	s.sweepUploads()
	s.finishPending(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			s.sweepUploads()
		case <-retry.C:
			s.finishPending(ctx)
		}
	}
}

// sweepUploads removes the expired uploads no request holds.
func (s *Server) sweepUploads() (removed int) {
	for _, id := range s.tus.Expired(s.cfg.Now()) {
		if !s.tus.Lock(id) {
			continue
		}
		if u, ok := s.tus.Get(id); ok && !s.cfg.Now().Before(u.Expires) {
			if err := s.tus.Remove(id); err != nil {
				s.cfg.Log.Warn("remove expired upload", "video_id", id, "err", err)
			} else {
				removed++
			}
		}
		s.tus.Unlock(id)
	}
	for _, id := range s.tus.ExpiredDone(s.cfg.Now()) {
		if err := s.tus.Forget(id); err != nil {
			s.cfg.Log.Warn("remove the completion record of a finished upload", "video_id", id, "err", err)
		}
	}
	if removed > 0 {
		s.cfg.Log.Info("expired resumable uploads removed", "count", removed)
	}
	return removed
}

// tusMaxAge is the longest an unfinished upload lives, however its bytes
// trickle in: 7 times its expiry after the last bytes (7 days by default).
func tusMaxAge(expiry time.Duration) time.Duration { return 7 * expiry }

// tusExpires is when an upload created at created, whose last bytes
// arrived at now, expires: Uploads.TusExpiry later, and never later than
// tusMaxAge after its creation.
func (s *Server) tusExpires(created, now time.Time) time.Time {
	e := now.Add(s.cfg.Uploads.TusExpiry)
	if most := created.Add(tusMaxAge(s.cfg.Uploads.TusExpiry)); e.After(most) {
		e = most
	}
	return e.UTC()
}

// tusMethodOverride honours X-HTTP-Method-Override on a POST to a tus
// upload URL, for PATCH, DELETE and HEAD, as tusd does: some clients
// (tus-js-client's overridePatchMethod) and proxies cannot send PATCH.
// Elsewhere it means nothing. A browser's cookie-authenticated POST is
// checked for cross-origin as the POST it was sent as: overridden to HEAD
// it would otherwise pass as a safe method.
func (s *Server) tusMethodOverride(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/uploads/tus/") {
			switch m := r.Header.Get("X-HTTP-Method-Override"); m {
			case http.MethodPatch, http.MethodDelete, http.MethodHead:
				if r.Header.Get("Authorization") == "" && s.sessionID(r) != "" && !strings.HasPrefix(r.URL.Path, "/v1/uploads/tus/direct/") {
					if err := s.crossOrigin(r); err != nil {
						respond.Error(w, logger(r, s.cfg.Log), err)
						return
					}
				}
				r.Method = m
			}
		}
		next.ServeHTTP(w, r)
	})
}

// directPool is the upload slots' key of account's direct uploads (made
// through direct upload URLs, by end users): a pool of their own, as
// large as the plan's, so that they never take the account's own slots.
// Slugs hold no colon: it collides with no account.
func directPool(account string) string { return "direct:" + account }

// uploadPool is the upload slots' key of upload u's PATCHes.
func uploadPool(u tus.Upload) string {
	if u.Direct != "" {
		return directPool(u.Account)
	}
	return u.Account
}
