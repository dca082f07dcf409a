package tus

import (
	"context"
	"crypto/subtle"
	"errors"
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
)

// tus 1.0 resumable uploads (https://tus.io/protocols/resumable-upload),
// with the creation, creation-with-upload, termination, expiration and
// checksum extensions. tusd's handler (pkg/handler/unrouted_handler.go)
// was the reference for the protocol's edge cases.
//
// An upload becomes a video: its id is the video's, and its last byte
// goes through Host.Accept, exactly as a multipart POST /v1/videos.
// Every check a multipart upload meets is made as early as tus allows:
// the plan's size, the type (from the filename's extension) and the
// collection at creation (from Upload-Length and Upload-Metadata), the
// contents once the first bytes are in, the collection again at the end.
const (
	// tusSweepEvery is how often expired partial uploads are removed.
	tusSweepEvery = 5 * time.Minute

	// RetryEvery is how often kino tries again to accept the pending
	// uploads (complete, not yet videos) while the event store takes
	// writes.
	RetryEvery = 5 * time.Second

	// tusTakeoverWait bounds how long a PATCH or DELETE waits for the
	// request it interrupts to let the upload go (it may be accepting
	// the video, past its body).
	tusTakeoverWait = 10 * time.Second
)

// tusTarget is who asks about which upload: an account (with its API
// key), or the holder of a direct upload URL (direct: its token's hash).
type tusTarget struct {
	c      Caller
	id     string
	direct string
}

// Protocol sets Tus-Resumable on every answer and refuses (412) a
// request of another protocol version. OPTIONS needs no version. The
// server runs it before authenticating a tus route's request.
func (h *Handler) Protocol(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Tus-Resumable", Version)
	if r.Method != http.MethodOptions && r.Header.Get("Tus-Resumable") != Version {
		w.Header().Set("Tus-Version", Version)
		return domain.E("tus", domain.PreconditionFailed,
			"this is a tus %s server: send the header Tus-Resumable: %s", Version, Version)
	}
	if h.store == nil {
		return domain.E("tus", domain.Unavailable, "resumable uploads are not enabled on this server")
	}
	return nil
}

// tusOptions answers tus's discovery request.
func (t *Handler) tusOptions(w http.ResponseWriter, _ *http.Request) error {
	h := w.Header()
	h.Set("Tus-Resumable", Version)
	h.Set("Tus-Version", Version)
	h.Set("Tus-Extension", Extensions)
	h.Set("Tus-Checksum-Algorithm", Checksums)
	h.Set("Tus-Max-Size", strconv.FormatInt(t.cfg.MaxSize, 10))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) tusCreate(w http.ResponseWriter, r *http.Request) error {
	return h.createUpload(w, r, h.host.Caller(r), creation{})
}

func (h *Handler) tusHead(w http.ResponseWriter, r *http.Request) error {
	return h.headUpload(w, r, tusTarget{c: h.host.Caller(r), id: mux.Vars(r)["id"]})
}

func (h *Handler) tusPatch(w http.ResponseWriter, r *http.Request) error {
	return h.patchUpload(w, r, tusTarget{c: h.host.Caller(r), id: mux.Vars(r)["id"]})
}

func (h *Handler) tusDelete(w http.ResponseWriter, r *http.Request) error {
	return h.deleteUpload(w, r, tusTarget{c: h.host.Caller(r), id: mux.Vars(r)["id"]})
}

// BufferSize is the read buffer of each multipart upload in flight:
// with diskspace.Block for its writes, most of its memory cost. (A bigger
// one was measured too: it changed nothing.) A chunk's body goes to its
// file through diskspace.Writer's ReadFrom alone.
const BufferSize = 1 << 20

// uploadRetry is the Retry-After of a creation refused for the
// account's unfinished uploads (as of an upload refused a slot).
const uploadRetry = 5

// metaSettings reads an upload's settings from Upload-Metadata: its
// playbackPolicy and download, and its details (title, description, tags
// comma-separated, metadata[<key>]), normalized for filename.
func (h *Handler) metaSettings(meta map[string]string, filename string) (Settings, error) {
	var p, d *string
	if v, ok := meta["playbackPolicy"]; ok {
		p = &v
	}
	if v, ok := meta["download"]; ok {
		d = &v
	}
	s, err := h.host.Settings(p, d)
	if err != nil {
		return Settings{}, err
	}
	fields := make(map[string][]string, len(meta))
	for k, v := range meta {
		fields[k] = []string{v}
	}
	details, err := domain.DetailsFromFields(fields)
	if err != nil {
		return Settings{}, err
	}
	if s.Details, err = details.Normalize("upload video", filename); err != nil {
		return Settings{}, err
	}
	if v, ok := meta["thumbnailTime"]; ok {
		if s.ThumbnailTime, err = domain.ParseThumbnailTime("upload video", v); err != nil {
			return Settings{}, err
		}
	}
	return s, nil
}

// hasDetails reports whether Upload-Metadata names any of an upload's
// details.
func hasDetails(meta map[string]string) bool {
	for k := range meta {
		if k == "title" || k == "description" || k == "tags" || strings.HasPrefix(k, "metadata[") {
			return true
		}
	}
	return false
}

// creation is what a direct upload URL fixes of the upload it creates.
type creation struct {
	id, collection, direct, token string
	settings                      *Settings                       // a direct upload's playbackPolicy and download, fixed by its issuer
	claim                         func(ctx context.Context) error // marks the URL used, just before the upload is created
	unclaim                       func()                          // marks it unused again: the creation was refused
}

// MaxUnfinished is how many unfinished tus uploads an account may hold
// on a node: twice the uploads its plan may run at once, so a client can
// keep a few files going, but an account cannot fill the disk with
// partial uploads it never finishes.
func MaxUnfinished(l domain.Limits) int { return max(2, 2*l.ConcurrentUploads) }

// byteCount reads a header tus defines as a non-negative integer
// (Upload-Length, Upload-Offset): decimal digits only, where strconv alone
// also takes a sign ("+5").
func byteCount(raw string) (int64, bool) {
	if raw == "" || strings.Trim(raw, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	return n, err == nil
}

// createUpload is tus's creation (and creation-with-upload).
func (h *Handler) createUpload(w http.ResponseWriter, r *http.Request, c Caller, cr creation) error {
	if r.Header.Get("Upload-Defer-Length") != "" || r.Header.Get("Upload-Concat") != "" {
		return errBadRequest("Upload-Defer-Length and Upload-Concat are not supported: send Upload-Length")
	}
	raw := r.Header.Get("Upload-Length")
	length, ok := byteCount(raw)
	if !ok {
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
	meta, err := ParseMetadata(metaRaw)
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
	settings, err := h.metaSettings(meta, filename)
	if err != nil {
		return err
	}
	if cr.settings != nil {
		// The URL's holder (a browser) must not make a signed video public.
		if settings.Policy != "" || settings.Download != nil {
			return errBadRequest("this direct upload URL's playbackPolicy and download are set by whoever asked for it (POST /v1/uploads); leave them out of Upload-Metadata")
		}
		// Its details too, when the issuer gave any; otherwise the
		// holder's (the title a visitor typed).
		if issued := cr.settings.Details; !issued.IsZero() {
			if hasDetails(meta) {
				return errBadRequest("this direct upload URL's title, description, tags and metadata are set by whoever asked for it (POST /v1/uploads); leave them out of Upload-Metadata")
			}
			settings.Details = issued
		}
		settings.Policy, settings.Download = cr.settings.Policy, cr.settings.Download
	}
	if err := h.host.Collection(r.Context(), c.Account, slug); err != nil {
		return err
	}
	if err := h.host.Writable(); err != nil {
		return err
	}
	// Uploads through direct upload URLs are counted apart, under a cap
	// of their own (as many as the unused URLs an account may hold): the
	// URLs' holders must not lock the account out of its own uploads.
	n := h.store.Usage(c.Account, cr.direct != "")
	if most := MaxUnfinished(c.Limits); cr.direct == "" && n >= most {
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return domain.E("upload video", domain.RateLimited,
			"your account has %d unfinished resumable uploads, the most it may hold: finish or DELETE one first (GET /v1/uploads lists them; unfinished uploads expire %s after their last bytes)", n, h.cfg.Expiry)
	}
	if cr.direct != "" && n >= DirectOutstandingMax {
		w.Header().Set("Retry-After", strconv.Itoa(uploadRetry))
		return domain.E("upload video", domain.RateLimited,
			"the account has %d unfinished direct uploads, the most it may hold: retry once one has finished or expired", n)
	}
	// Its own length only: what other uploads (of other accounts) may
	// still send is not held against it, or one account's announced but
	// unsent bytes would refuse everyone else. The disk is still guarded
	// where it is filled: every chunk is written above the reserve
	// (diskspace.Writer), as a multipart upload is, and an account's unsent
	// bytes are bounded by its own plan (MaxUnfinished uploads of at most
	// MaxUploadBytes each).
	if err := h.host.CheckStorage(c.Account, c.Limits, length); err != nil {
		return err
	}
	if err := h.host.CheckRoom(length); err != nil {
		return err
	}
	withBody := hasBody(r)
	if withBody {
		if err := tusContentType(r); err != nil {
			return err
		}
		// The slot first: an upload created and then refused a slot
		// would be left behind, unknown to the client.
		release, err := h.host.Acquire(w, uploadPool(Upload{Account: c.Account, Direct: cr.direct}), c.Limits.ConcurrentUploads)
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
		id = h.cfg.NewID()
	}
	if withBody { // held from before the upload exists: no PATCH can slip in
		if !h.store.Lock(id) {
			return domain.E("upload video", domain.Conflict, "the upload is busy")
		}
		defer h.store.Unlock(id)
	}
	now := h.cfg.Now()
	u := Upload{ID: id, Account: c.Account, Collection: slug, Filename: filename, Ext: ext,
		Length: length, MaxSize: c.Limits.MaxUploadBytes, Metadata: metaRaw, Direct: cr.direct, Settings: settings,
		Created: now.UTC(), Expires: h.tusExpires(now, now)}
	if err := h.store.Create(u); err != nil {
		return h.host.StoreFailure(w, err)
	}
	h.host.Logger(r).Info("resumable upload created", "video_id", id, "bytes", length, "collection", slug, "direct", cr.direct != "")
	w.Header().Set("Location", h.tusLocation(id, cr.token))
	if withBody {
		if u, err = h.writeChunk(w, r, u); err != nil {
			if cur, ok := h.store.Get(id); ok && cur.Pending() {
				// Every byte is in, but the video could not be stored:
				// the upload is made and kept, and its client, told the
				// offset of the last byte, sends that again (or kino
				// accepts it by itself once the stores are back).
				h.host.Logger(r).Warn("resumable upload created complete but not accepted yet", "video_id", id, "err", err)
				u, err = cur, nil
			}
		}
		if err != nil {
			if !interrupted(err) {
				// Refused (not a video, a bad checksum...): the client
				// learns it now, and there is no upload to go on with.
				if _, ok := h.store.Get(id); ok {
					_ = h.store.Remove(id)
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
func (h *Handler) tusLocation(id, token string) string {
	base := h.cfg.BaseURL
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
func (h *Handler) findUpload(t tusTarget) (Upload, error) {
	u, ok := h.store.Get(t.id)
	if !ok {
		return h.findCompleted(t)
	}
	if !ok || !domain.ValidID(t.id) || u.Account != t.c.Account ||
		t.direct != "" && subtle.ConstantTimeCompare([]byte(u.Direct), []byte(t.direct)) != 1 {
		return Upload{}, errNotFound("upload")
	}
	if now := h.cfg.Now(); !now.Before(u.Expires) {
		if h.store.Lock(u.ID) {
			_ = h.store.Remove(u.ID)
			h.store.Unlock(u.ID)
		}
		return Upload{}, domain.E("upload video", domain.Gone,
			"this upload expired at %s (%s after its last bytes arrived, or %s after it was created) and was removed; start a new one", u.Expires.Format(time.RFC3339), h.cfg.Expiry, MaxAge(h.cfg.Expiry))
	}
	return u, nil
}

// findCompleted is the target's finished upload, from its completion
// record: complete (Offset == Length), for its owner only.
func (h *Handler) findCompleted(t tusTarget) (Upload, error) {
	d, ok := h.store.Completed(t.id)
	if !ok || !domain.ValidID(t.id) || d.Account != t.c.Account ||
		subtle.ConstantTimeCompare([]byte(d.Direct), []byte(t.direct)) != 1 || !h.cfg.Now().Before(d.Expires) {
		return Upload{}, errNotFound("upload")
	}
	return Upload{ID: d.ID, Account: d.Account, Direct: d.Direct, Length: d.Length, Offset: d.Length,
		Metadata: d.Metadata, Expires: d.Expires, Finished: true}, nil
}

func (h *Handler) headUpload(w http.ResponseWriter, _ *http.Request, t tusTarget) error {
	u, err := h.findUpload(t)
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("Upload-Offset", strconv.FormatInt(u.ResumeOffset(), 10))
	hd.Set("Upload-Length", strconv.FormatInt(u.Length, 10))
	hd.Set("Upload-Expires", u.Expires.Format(http.TimeFormat))
	if u.Metadata != "" {
		hd.Set("Upload-Metadata", u.Metadata)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (h *Handler) patchUpload(w http.ResponseWriter, r *http.Request, t tusTarget) error {
	found, err := h.findUpload(t)
	if err != nil {
		return err
	}
	if err := tusContentType(r); err != nil {
		return err
	}
	raw := r.Header.Get("Upload-Offset")
	offset, ok := byteCount(raw)
	if !ok {
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
	if !h.store.Takeover(r.Context(), t.id, tusTakeoverWait) {
		w.Header().Set("Connection", "close") // the body is not read
		return domain.E("upload video", domain.Conflict, "another request is writing to this upload; retry once it has ended")
	}
	defer h.store.Unlock(t.id)
	u, err := h.findUpload(t) // again, now that it is ours
	if err != nil {
		return err
	}
	if u.Finished { // the request we waited for was its last chunk
		return patchDone(w, r, u, offset)
	}
	if !resumesAt(u, offset) {
		return errOffset(w, offset, u)
	}
	if err := h.host.Writable(); err != nil {
		w.Header().Set("Connection", "close")
		return err
	}
	if u.Pending() {
		// A try whose answer was lost may have made the video after all:
		// then the upload is complete, and its bytes, which may be linked
		// to the video's original, are not written again.
		switch ok, err := h.uploadAccepted(r.Context(), u); {
		case err != nil:
			return err
		case ok:
			h.completeUpload(h.host.Logger(r).With("video_id", u.ID), u)
			return patchDone(w, r, u, offset)
		}
		if offset == u.Length {
			// No byte is missing: the acceptance is tried again (a body
			// would go past the length: 413).
			if !hasBody(r) {
				if err := h.finishUpload(r.Context(), u); err != nil {
					return h.storeFailureOr(w, err)
				}
			}
			return patchDone(w, r, u, offset)
		}
	}
	release, err := h.host.Acquire(w, uploadPool(u), t.c.Limits.ConcurrentUploads)
	if err != nil {
		w.Header().Set("Connection", "close")
		return err
	}
	defer release()
	if u.Pending() { // its last byte again: the acceptance is tried again
		if u, err = h.store.Reopen(u); err != nil {
			return h.host.StoreFailure(w, err)
		}
	}
	u, err = h.writeChunk(w, r, u)
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
func resumesAt(u Upload, offset int64) bool {
	return offset == u.ResumeOffset() || u.Pending() && offset == u.Length
}

// hasBody reports whether r carries a body.
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// errOffset refuses a PATCH at offset, which is not where upload u
// resumes.
func errOffset(w http.ResponseWriter, offset int64, u Upload) error {
	w.Header().Set("Connection", "close")
	return domain.E("upload video", domain.Conflict, "Upload-Offset is %d but the upload has %d bytes: send HEAD to learn the offset, and resume from it", offset, u.ResumeOffset())
}

// patchDone answers a PATCH of a finished upload u: at its length, a
// no-op (as tusd answers); elsewhere 409.
func patchDone(w http.ResponseWriter, r *http.Request, u Upload, offset int64) error {
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

func errUploadComplete(u Upload) error {
	return domain.E("upload video", domain.Conflict, "the upload is complete: it is video %s (DELETE /v1/videos/%s removes it)", u.ID, u.ID)
}

func (h *Handler) deleteUpload(w http.ResponseWriter, r *http.Request, t tusTarget) error {
	if u, err := h.findUpload(t); err != nil {
		return err
	} else if u.Finished {
		return errUploadComplete(u)
	}
	if !h.store.Takeover(r.Context(), t.id, tusTakeoverWait) {
		return domain.E("upload video", domain.Conflict, "a PATCH of this upload is in progress; retry once it has ended")
	}
	defer h.store.Unlock(t.id)
	// Again, now that it is ours: the PATCH we waited for may have been
	// its last chunk, and then there is a video, not an upload, here.
	if u, err := h.findUpload(t); err != nil {
		return err
	} else if u.Finished {
		return errUploadComplete(u)
	}
	if err := h.store.Remove(t.id); err != nil {
		return domain.Wrap("delete upload", domain.Internal, err, "")
	}
	h.host.Logger(r).Info("resumable upload terminated", "video_id", t.id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func tusContentType(r *http.Request) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != ContentType {
		return domain.E("upload video", domain.Unsupported, "a tus PATCH carries Content-Type: %s", ContentType)
	}
	return nil
}

// errInterrupted marks a chunk that broke off (a body that stopped or
// ended early): the bytes received are kept, the client resumes.
type errInterrupted struct{ error }

func (e errInterrupted) Unwrap() error { return e.error }

// storeFault reports whether err is a write error of an upload's file
// (wrapWriteError), the server's fault.
func storeFault(err error) bool {
	var f *writeError
	return errors.As(err, &f)
}

func interrupted(err error) bool {
	var e errInterrupted
	return errors.As(err, &e)
}

// writeChunk appends the request's body to upload u (whose lock the
// caller holds) and records the new offset; at the last byte it accepts
// the upload as a video. It returns the upload as recorded.
func (h *Handler) writeChunk(w http.ResponseWriter, r *http.Request, u Upload) (Upload, error) {
	remaining := u.Length - u.Offset
	if r.ContentLength > remaining {
		w.Header().Set("Connection", "close")
		return u, domain.E("upload video", domain.RequestTooLarge, "the chunk of %d bytes goes past Upload-Length (%d bytes are left to send)", r.ContentLength, remaining)
	}
	sum, err := ParseChecksum(r.Header.Get("Upload-Checksum"))
	if err != nil {
		w.Header().Set("Connection", "close")
		return u, err
	}
	// The chunk's announced bytes are claimed before any is read: several
	// chunks in flight each find the room the others have not claimed. An
	// empty chunk (a client asking where it stands) needs none.
	var claim *diskspace.Claim
	if r.ContentLength > 0 {
		if claim, err = h.host.ClaimRoom(r.ContentLength); err != nil {
			w.Header().Set("Connection", "close") // the body is not read
			return u, err
		}
	}
	defer claim.Release()
	f, err := os.OpenFile(h.store.DataPath(u.ID), os.O_WRONLY, 0)
	if err != nil {
		return u, h.host.StoreFailure(w, err)
	}
	defer f.Close()
	// Bytes past the recorded offset (a crash in the middle of a PATCH)
	// were never acknowledged: they go.
	if err := f.Truncate(u.Offset); err != nil {
		return u, h.host.StoreFailure(w, err)
	}
	if _, err := f.Seek(u.Offset, io.SeekStart); err != nil {
		return u, h.host.StoreFailure(w, err)
	}
	body := h.host.Body(w, r)
	defer body.Done()
	h.store.Interruptible(u.ID, body.Interrupt)
	var src io.Reader = io.LimitReader(body, remaining+1)
	if sum != nil {
		src = io.TeeReader(src, sum)
	}
	dst := &diskspace.Writer{W: f, Guard: h.host.Disk(), Claim: claim, Wrap: wrapWriteError, Offset: u.Offset}
	n, err := dst.ReadFrom(src)
	body.Done() // past the body: a takeover waits for the rest, never cuts it
	discard := func() { _ = f.Truncate(u.Offset) }
	switch {
	case n > remaining:
		discard()
		w.Header().Set("Connection", "close")
		return u, domain.E("upload video", domain.RequestTooLarge, "the chunk goes past Upload-Length (%d bytes were left to send); nothing of it was kept", remaining)
	case errors.Is(err, diskspace.ErrNoRoom), storeFault(err):
		discard()
		return u, h.host.StoreFailure(w, err)
	case err != nil && sum != nil:
		discard() // a chunk with a checksum is kept whole or not at all
		return u, errInterrupted{body.Error(w, err, false)}
	case err == nil && sum != nil && !sum.Matches():
		discard()
		return u, domain.E("upload video", domain.ChecksumMismatch, "the chunk does not match its Upload-Checksum (%s); it was discarded: send it again", sum.Algorithm)
	}
	readErr := err
	if err := f.Close(); err != nil {
		return u, h.host.StoreFailure(w, err)
	}
	u.Offset += n
	if n > 0 { // only bytes move the expiry: an empty PATCH keeps nothing alive
		u.Expires = h.tusExpires(u.Created, h.cfg.Now())
	}
	if !u.Sniffed && (u.Offset >= ffmpeg.SniffLen || u.Offset == u.Length) {
		if err := h.sniffUpload(u); err != nil {
			_ = h.store.Remove(u.ID)
			h.host.Logger(r).Info("resumable upload refused: not a video", "video_id", u.ID)
			return u, err
		}
		u.Sniffed = true
	}
	if err := h.store.Save(u); err != nil {
		return u, h.host.StoreFailure(w, err)
	}
	if readErr != nil {
		return u, errInterrupted{body.Error(w, readErr, true)}
	}
	if u.Offset < u.Length {
		return u, nil
	}
	if err := h.finishUpload(r.Context(), u); err != nil {
		return u, h.storeFailureOr(w, err)
	}
	u.Finished = true
	return u, nil
}

// sniffUpload refuses (415) an upload whose first bytes are not a video,
// with Host.Sniff, as a multipart upload is refused.
func (h *Handler) sniffUpload(u Upload) error {
	f, err := os.Open(h.store.DataPath(u.ID))
	if err != nil {
		return domain.Wrap("upload video", domain.Internal, err, "")
	}
	defer f.Close()
	return h.host.Sniff(io.LimitReader(f, ffmpeg.SniffLen))
}

// Run looks after this node's tus uploads until ctx ends: it removes the
// expired ones now and every few minutes (Sweep), and tries again to
// accept the pending ones now and every retryEvery (FinishPending; kino
// serve's is RetryEvery).
func (h *Handler) Run(ctx context.Context, retryEvery time.Duration) {
	if h.store == nil {
		return
	}
	sweep := time.NewTicker(tusSweepEvery)
	defer sweep.Stop()
	retry := time.NewTicker(retryEvery)
	defer retry.Stop()
	h.Sweep()
	h.FinishPending(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			h.Sweep()
		case <-retry.C:
			h.FinishPending(ctx)
		}
	}
}

// Sweep removes the expired uploads no request holds.
func (h *Handler) Sweep() (removed int) {
	for _, id := range h.store.Expired(h.cfg.Now()) {
		if !h.store.Lock(id) {
			continue
		}
		if u, ok := h.store.Get(id); ok && !h.cfg.Now().Before(u.Expires) {
			if err := h.store.Remove(id); err != nil {
				h.cfg.Log.Warn("remove expired upload", "video_id", id, "err", err)
			} else {
				removed++
			}
		}
		h.store.Unlock(id)
	}
	for _, id := range h.store.ExpiredDone(h.cfg.Now()) {
		if err := h.store.Forget(id); err != nil {
			h.cfg.Log.Warn("remove the completion record of a finished upload", "video_id", id, "err", err)
		}
	}
	if removed > 0 {
		h.cfg.Log.Info("expired resumable uploads removed", "count", removed)
	}
	return removed
}

// MaxAge is the longest an unfinished upload lives, however its bytes
// trickle in: 7 times its expiry after the last bytes (7 days by default).
func MaxAge(expiry time.Duration) time.Duration { return 7 * expiry }

// tusExpires is when an upload created at created, whose last bytes
// arrived at now, expires: Config.Expiry later, and never later than
// MaxAge after its creation.
func (h *Handler) tusExpires(created, now time.Time) time.Time {
	e := now.Add(h.cfg.Expiry)
	if most := created.Add(MaxAge(h.cfg.Expiry)); e.After(most) {
		e = most
	}
	return e.UTC()
}

// DirectPool is the upload slots' key of account's direct uploads (made
// through direct upload URLs, by end users): a pool of their own, as
// large as the plan's, so that they never take the account's own slots.
// Slugs hold no colon: it collides with no account.
func DirectPool(account string) string { return "direct:" + account }

// uploadPool is the upload slots' key of upload u's PATCHes.
func uploadPool(u Upload) string {
	if u.Direct != "" {
		return DirectPool(u.Account)
	}
	return u.Account
}
