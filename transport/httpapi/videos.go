package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/tus"
	"github.com/kino-video/kino/transport/wire"
)

func videoStream(id string) domain.StreamID {
	return domain.VideoStream(id)
}

// multipartSlack allows for multipart framing around the file when a
// Content-Length announces an upload that is certainly too large.
const multipartSlack = 1 << 20

// uploadVideo is spec §4.1. The file streams to disk as it arrives (never
// into memory); the plan's size limit is enforced while it streams. The
// original lands under <media>/<id>/ only once it is complete, and is
// removed again if its UploadAccepted event cannot be stored.
func (s *Server) uploadVideo(w http.ResponseWriter, r *http.Request) error {
	c := callerOf(r)
	release, err := s.uploads.acquire(w, c.Account, c.Limits.ConcurrentUploads)
	if err != nil {
		return err
	}
	defer release()
	maxSize := c.Limits.MaxUploadBytes
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return errBadRequest("request must be multipart/form-data with fields file and collection")
	}
	if r.ContentLength > maxSize+multipartSlack {
		w.Header().Set("Connection", "close")
		return domain.E("upload video", domain.TooLarge, "upload is %d bytes; your plan allows files of at most %d bytes", r.ContentLength, maxSize)
	}
	// The announced size, less what the other fields may take, against the
	// storage quota; the file's own size is checked again on acceptance.
	if err := s.checkStorage(c.Account, c.Limits, r.ContentLength-multipartSlack); err != nil {
		return err
	}
	// Refused before the body is read: while the event store cannot take
	// the upload's event (503), or the disk cannot take the file (507).
	if err := s.writable(); err != nil {
		w.Header().Set("Connection", "close")
		return err
	}
	claim, err := s.claimRoom(r.ContentLength)
	if err != nil {
		w.Header().Set("Connection", "close")
		return err
	}
	defer claim.Release()
	// A large read buffer: multipart would otherwise read the socket and
	// hand out the file 4 KiB at a time (one syscall each way per 4 KiB).
	// The body ends when it makes no progress for Uploads.IdleTimeout.
	body := newIdleBody(w, r, s.cfg.Uploads.IdleTimeout, s.cfg.Now)
	defer body.done()
	mr := multipart.NewReader(bufio.NewReaderSize(body, tus.BufferSize), params["boundary"])

	var (
		slug, filename, ext string
		haveSlug            bool
		settings            uploadSettings
		details             = map[string][]string{} // title, description, tags, metadata[<key>]
		nDetails            int
		size                int64
		tmp                 *os.File
	)
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			if body.timedOut {
				return body.bodyError(w, err)
			}
			return errBadRequest("malformed multipart body: %v", err)
		}
		name := part.FormName()
		if name == "title" || name == "description" || name == "tags" || strings.HasPrefix(name, "metadata[") {
			// Bounded: each field's size, and how many there are.
			if nDetails++; nDetails > domain.MaxTags+domain.MaxMetadataKeys+2 {
				return errBadRequest("too many title, description, tags and metadata fields")
			}
			b, err := io.ReadAll(io.LimitReader(part, maxDetailField+1))
			if err != nil {
				return body.bodyError(w, err)
			}
			if len(b) > maxDetailField {
				return errBadRequest("field %q is too large", domain.Truncate(name, 60))
			}
			details[name] = append(details[name], string(b))
			continue
		}
		switch name {
		case "collection":
			b, err := io.ReadAll(io.LimitReader(part, 257))
			if err != nil {
				return body.bodyError(w, err)
			}
			if len(b) > 256 {
				return errBadRequest("collection must be a collection slug")
			}
			slug, haveSlug = strings.TrimSpace(string(b)), true
			if tmp == nil { // sent before the file: refuse an unknown collection before reading it
				if _, err = s.uploadCollection(r.Context(), c.Account, slug); err != nil {
					return err
				}
			}
		case "thumbnailTime":
			b, err := io.ReadAll(io.LimitReader(part, 65))
			if err != nil {
				return body.bodyError(w, err)
			}
			if settings.ThumbnailTime, err = domain.ParseThumbnailTime("upload video", string(b)); err != nil {
				return err
			}
		case "playbackPolicy", "download":
			b, err := io.ReadAll(io.LimitReader(part, 65))
			if err != nil {
				return body.bodyError(w, err)
			}
			v := string(b)
			if part.FormName() == "download" {
				err = parseSettings(&settings, nil, &v)
			} else {
				err = parseSettings(&settings, &v, nil)
			}
			if err != nil {
				return err
			}
		case "file":
			if tmp != nil {
				return errBadRequest("send exactly one file per upload")
			}
			filename, err = partFilename(part)
			if err != nil {
				return err
			}
			// Details sent before the file are checked before it is read.
			if settings.Details, err = uploadDetails(details, filename); err != nil {
				return err
			}
			if ext, err = domain.Extension(filename); err != nil {
				return err
			}
			head, err := sniffVideo(part)
			if err != nil {
				if domain.IsKind(err, domain.Unsupported) {
					w.Header().Set("Connection", "close") // the rest of the body is not read
					return err
				}
				return body.bodyError(w, err)
			}
			if tmp, err = s.cfg.Media.Incoming(); err != nil {
				return storeFailure(w, err)
			}
			size, err = copyLimited(&diskspace.Writer{W: tmp, Guard: s.disk, Claim: claim, Wrap: wrapStoreError}, io.MultiReader(bytes.NewReader(head), part), maxSize)
			var serr *storeError
			switch {
			case errors.Is(err, errTooLarge):
				w.Header().Set("Connection", "close")
				return domain.E("upload video", domain.TooLarge, "file exceeds your plan's limit of %d bytes", maxSize)
			case errors.Is(err, diskspace.ErrNoRoom), errors.As(err, &serr):
				return storeFailure(w, err)
			case err != nil:
				return body.bodyError(w, err)
			}
			if err := tmp.Close(); err != nil {
				return storeFailure(w, err)
			}
		default:
			// Unknown fields are ignored, but not read without bound.
			if _, err := io.CopyN(io.Discard, part, 1<<20+1); err == nil {
				return errBadRequest("field %q is too large", part.FormName())
			} else if err != io.EOF {
				return body.bodyError(w, err)
			}
		}
	}
	if tmp == nil {
		return errBadRequest("file is required: send the video in the multipart field \"file\"")
	}
	if !haveSlug || slug == "" {
		return errBadRequest("collection is required: send the collection slug in the multipart field \"collection\"")
	}
	if settings.Details, err = uploadDetails(details, filename); err != nil {
		return err
	}
	id := s.cfg.Store.NewID()
	if err := s.acceptUpload(r.Context(), upload{ID: id, Account: c.Account, Collection: slug, Filename: filename,
		Ext: ext, Size: size, MaxSize: maxSize, Path: tmp.Name(), Settings: settings}); err != nil {
		return storeFailureOr(w, err)
	}
	tmp = nil // now owned by the video's directory
	respond.JSON(w, http.StatusAccepted, wire.Uploaded{
		Message: "Video uploaded and queued for processing",
		Video:   wire.UploadedVideo{ID: id, Filename: filename, Status: domain.StatusPending, Collection: slug},
	})
	return nil
}

// maxDetailField bounds one title, description, tags or metadata field of
// a multipart upload, in bytes (a description of MaxDescriptionLen
// characters of up to four bytes each).
const maxDetailField = 4 * domain.MaxDescriptionLen

// uploadDetails reads and normalizes a multipart upload's details.
func uploadDetails(fields map[string][]string, filename string) (domain.Details, error) {
	d, err := domain.DetailsFromFields(fields)
	if err != nil {
		return domain.Details{}, err
	}
	return d.Normalize("upload video", filename)
}

// upload is a complete file received by the API (a multipart POST, or a
// tus upload's last byte), to be accepted as video ID.
type upload struct {
	ID, Account, Collection, Filename, Ext string
	Size, MaxSize                          int64
	Path                                   string // the file on the local disk
	Settings                               uploadSettings
}

// errStore marks a failure of acceptUpload to store the file, which the
// caller answers through storeFailure (it may set headers); the upload
// handler (package tus) knows it too.
type errStore = tus.StoreError

// storeFailureOr answers an error of acceptUpload.
func storeFailureOr(w http.ResponseWriter, err error) error {
	var se errStore
	if errors.As(err, &se) {
		return storeFailure(w, se.Err)
	}
	return err
}

// acceptUpload is the one acceptance of an uploaded file, the same for
// multipart and tus: the collection checked again (it may have been
// deleted while the file streamed), the file committed as the video's
// original, its UploadAccepted stored, and the file removed again when the
// event could not be. On success the file at u.Path belongs to the video;
// on failure the caller still owns (and removes) whatever is left there.
func (s *Server) acceptUpload(ctx context.Context, u upload) error {
	if u.Size == 0 {
		return errBadRequest("file is empty")
	}
	// The collection and the quota are read from the read models: they
	// must hold the account's writes (a collection deleted, an upload
	// accepted a moment ago), also when the upload did not come as the
	// account (a direct upload URL, the sweep of complete tus uploads).
	s.awaitOwnWrites(ctx, u.Account, allWrites)
	coll, err := s.uploadCollection(ctx, u.Account, u.Collection)
	if err != nil {
		return err
	}
	if limits, err := (uploadHost{s}).Limits(u.Account); err != nil {
		return err
	} else if err := s.checkStorage(u.Account, limits, u.Size); err != nil {
		return err
	}
	// A backend that commits by copying (the object store, on the disk of
	// the embedded NATS) needs the file's size again above the reserve.
	if c, ok := s.cfg.Media.(interface{ CommitCopies() bool }); ok && c.CommitCopies() {
		if err := s.disk.Fits(u.Size); errors.Is(err, diskspace.ErrNoRoom) || errors.Is(err, diskspace.ErrTooBig) {
			return errStore{Err: diskspace.ErrNoRoom}
		}
	}
	if err := s.cfg.Media.Commit(ctx, u.Path, u.ID, u.Ext); err != nil {
		return errStore{Err: err}
	}
	policy, download := applySettings(u.Settings, coll)
	res, err := executeIn[domain.Video](ctx, s.cfg.Store, videoStream(u.ID), domain.AcceptUpload{
		Account: u.Account, Collection: coll.Slug, CollectionName: coll.Name,
		Filename: u.Filename, Size: u.Size, MaxSize: u.MaxSize, PlaybackPolicy: policy, Download: download,
		Details: u.Settings.Details, ThumbnailTime: u.Settings.ThumbnailTime,
	})
	if err != nil {
		s.undoUpload(ctx, u.ID, err)
		return err
	}
	s.wroteFor(u.Account, res.LastSeq())
	s.cfg.Metrics.UploadBytes(u.Size)
	loggerFrom(ctx, s.cfg.Log).Info("video uploaded", "video_id", u.ID, "bytes", u.Size, "collection", coll.Slug)
	return nil
}

// uploadCollection finds the target collection of an upload. A miss waits
// once for the read models to catch up, so a collection created a moment
// ago by the CLI is found.
func (s *Server) uploadCollection(ctx context.Context, account, slug string) (projections.Collection, error) {
	if slug == "" {
		return projections.Collection{}, errBadRequest("collection is required: send the collection slug in the multipart field \"collection\"")
	}
	c, ok, err := s.cfg.DB.Collection(account, slug)
	if err == nil && !ok && domain.ValidSlug(slug) && s.catchUp(ctx) {
		c, ok, err = s.cfg.DB.Collection(account, slug)
	}
	if err == nil && !ok {
		err = domain.E("upload video", domain.NotFound, "collection %q not found", slug)
	}
	return c, err
}

// undoUpload removes a stored original whose UploadAccepted was not
// stored. When the failure leaves that open (a timeout, a lost answer),
// the stream decides: the file stays if the event is there.
func (s *Server) undoUpload(ctx context.Context, id string, cause error) {
	log := loggerFrom(ctx, s.cfg.Log).With("video_id", id)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	switch {
	case refused(cause):
		// Decide refused: nothing was appended.
	case errors.Is(cause, eventstore.ErrNotStored):
		// The event store refused before sending anything (an outage).
	default:
		events, _, err := s.cfg.Store.Load(ctx, videoStream(id))
		if err != nil || len(events) > 0 {
			log.Warn("upload outcome unknown or stored; keeping its file", "err", err, "cause", cause)
			return
		}
	}
	if err := s.cfg.Media.Remove(ctx, id); err != nil {
		log.Error("remove rejected upload", "err", err)
	}
}

// checkStorage refuses an upload of n bytes (nothing when n <= 0) that
// would take the account past its plan's storage quota: what its videos'
// originals and outputs hold, as the read models count it. Uploads in
// flight at once may together pass it by up to the plan's concurrent
// uploads; what their transcodes add counts once they are stored.
func (s *Server) checkStorage(account string, l domain.Limits, n int64) error {
	if n <= 0 || l.StorageBytes <= 0 {
		return nil
	}
	u, err := s.cfg.DB.Usage(account)
	if err != nil {
		return err
	}
	return l.CheckStorage(u.StorageBytes, n)
}

// refused reports whether err is the acceptance's refusal of an upload
// itself (Decide's, or the collection's being gone), which trying again
// does not change: nothing was appended.
func refused(err error) bool {
	switch domain.KindOf(err) {
	case domain.Invalid, domain.TooLarge, domain.Unsupported, domain.NotFound:
		return true
	}
	return false
}

// partFilename is the display name of the uploaded file: the client's name
// without any directory part. It is never used as a path.
func partFilename(part *multipart.Part) (string, error) {
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil {
		return "", errBadRequest("malformed Content-Disposition of field file")
	}
	name := domain.DisplayFilename(params["filename"])
	if name == "" {
		return "", errBadRequest("field file must carry a filename")
	}
	if err := domain.CheckFilename(name); err != nil {
		return "", err
	}
	return name, nil
}

var errTooLarge = errors.New("too large")

// copyLimited copies src to dst and fails with errTooLarge as soon as more
// than limit bytes arrive.
func copyLimited(dst io.Writer, src io.Reader, limit int64) (int64, error) {
	n, err := io.Copy(dst, io.LimitReader(src, limit+1))
	if err != nil {
		return n, err
	}
	if n > limit {
		return n, errTooLarge
	}
	return n, nil
}

// listVideos is GET /v1/videos: the spec's collection, status, limit and
// offset, and kino's search (q, tag, metadata[<key>]), createdAfter,
// createdBefore, sort and cursor pages (nextCursor).
func (s *Server) listVideos(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := atoiParam(r, "limit", 50, 1, 100)
	if err != nil {
		return err
	}
	offset, err := atoiParam(r, "offset", 0, 0, int(^uint(0)>>1))
	if err != nil {
		return err
	}
	vq, err := videoQuery(q)
	if err != nil {
		return err
	}
	vq.Limit, vq.Offset = limit, offset
	page, err := s.cfg.DB.QueryVideos(callerOf(r).Account, vq)
	if err != nil {
		return err
	}
	out := wire.Videos{Videos: s.renderVideos(r, page.Videos)}
	if page.Next != 0 {
		c := encodeCursor(page.Next, q)
		out.NextCursor = &c
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// videoVar is the live video named by the {id} path variable, whatever
// its account (callers that serve an account check it).
func (s *Server) videoVar(r *http.Request) (projections.Video, error) {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return projections.Video{}, errNotFound("video")
	}
	v, ok, err := s.cfg.DB.Video(id)
	if err == nil && !ok {
		err = errNotFound("video")
	}
	return v, err
}

func (s *Server) getVideo(w http.ResponseWriter, r *http.Request) error {
	v, err := s.videoVar(r)
	if err != nil {
		return err
	}
	if v.Account != callerOf(r).Account {
		return errNotFound("video")
	}
	respond.JSON(w, http.StatusOK, s.renderVideo(r, v))
	return nil
}

// deleteVideo records the deletion, then removes the files. Should the
// removal fail (or the process die first), the start-up sweep removes
// files of videos that no longer exist.
func (s *Server) deleteVideo(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("video")
	}
	res, err := execute[domain.Video](r, s.cfg.Store, videoStream(id), domain.DeleteVideo{Account: callerOf(r).Account})
	if err != nil {
		return err
	}
	if err := s.cfg.Media.Remove(context.WithoutCancel(r.Context()), id); err != nil {
		logger(r, s.cfg.Log).Error("remove video files", "video_id", id, "err", err)
	}
	s.settle(r, res.LastSeq())
	respond.JSON(w, http.StatusOK, wire.Message{Message: "Video deleted"})
	return nil
}

// videoEvents is a video's audit history, oldest first, read from the
// stream itself: it outlives the video (a deleted video answers 404 on GET
// but keeps its history). Video events hold no secrets; what they hold
// about kino's own machinery (which worker ran a transcode) is left out by
// tenantView.
func (s *Server) videoEvents(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("video")
	}
	events, _, err := s.cfg.Store.Load(r.Context(), videoStream(id))
	if err != nil {
		return err
	}
	if v := domain.Fold[domain.Video](events); !v.Created || v.Account != callerOf(r).Account {
		return errNotFound("video")
	}
	out := make([]wire.Event, len(events))
	for i, e := range events {
		out[i] = wire.Event{Seq: e.Seq, ID: e.ID, Type: e.Type, Version: e.Version, OccurredAt: domain.FormatTime(e.OccurredAt), Data: tenantView(e.Data)}
	}
	respond.JSON(w, http.StatusOK, wire.Events{Events: out})
	return nil
}

// startedView is TranscodeStarted as a tenant reads it: without the
// worker (host:pid), which tells nothing about the video and something
// about the servers.
type startedView struct {
	Account string `json:"account"`
	Attempt int    `json:"attempt"`
}

// tenantView is an event's payload as the video's account may read it.
func tenantView(data any) any {
	switch d := data.(type) {
	case domain.TranscodeStarted:
		return startedView{Account: d.Account, Attempt: d.Attempt}
	case *domain.TranscodeStarted:
		return startedView{Account: d.Account, Attempt: d.Attempt}
	}
	return data
}

// sniffVideo reads the first bytes of an uploaded file and refuses (415)
// one whose contents are none of the containers the transcoder reads,
// whatever its name says: a text file, an HLS playlist or a concat script
// named .mp4 never reaches ffmpeg. It returns the bytes it read, to be
// stored before the rest. An empty file passes, for the "file is empty"
// answer.
func sniffVideo(part io.Reader) ([]byte, error) {
	head := make([]byte, ffmpeg.SniffLen)
	n := 0
	for n < len(head) {
		m, err := part.Read(head[n:])
		n += m
		if err == io.EOF { // the file is shorter than what Sniff looks at
			break
		}
		if err != nil { // a broken or stalled body, not a short file
			return nil, err
		}
	}
	head = head[:n]
	if n > 0 && ffmpeg.Sniff(head) == "" {
		return nil, domain.E("upload video", domain.Unsupported,
			"the file is not a video kino can read: its contents are none of MP4/MOV/3GP, Matroska/WebM, AVI, FLV, ASF/WMV, MPEG-PS, MPEG-TS, MPEG-1/2 video or Ogg, whatever its name says")
	}
	return head, nil
}
