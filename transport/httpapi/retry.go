package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/wire"
)

// retryVideo queues a FAILED video for another processing run
// (TranscodeRetried; the transcoder's intake takes it as it takes an
// UploadAccepted). A FAILED video keeps its original (only its outputs are
// removed), which is checked first: a retry that could only fail again is
// refused.
func (s *Server) retryVideo(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("video")
	}
	account := callerOf(r).Account
	st, err := eventstore.Current[domain.Video](r.Context(), s.cfg.Store, videoStream(id))
	if err != nil {
		return err
	}
	if !st.Exists(account) {
		return errNotFound("video")
	}
	if st.Status == domain.StatusFailed {
		f, err := s.cfg.Media.Open(r.Context(), id, media.OriginalName(st.Ext))
		if domain.IsKind(err, domain.NotFound) {
			return domain.E("retry video", domain.Conflict, "the original file of this video is no longer stored; upload it again")
		}
		if eventstore.IsUnavailable(err) { // the media bucket's NATS did not answer
			return domain.Wrap("retry video", domain.Unavailable, err, "the media store is not answering; retry in a few seconds")
		}
		if err != nil {
			return err
		}
		_ = f.Close()
	}
	res, err := execute[domain.Video](r, s.cfg.Store, videoStream(id), domain.RetryTranscode{Account: account})
	if err != nil {
		return err
	}
	s.wrote(r, res.LastSeq())
	v := res.State
	respond.JSON(w, http.StatusAccepted, wire.Uploaded{
		Message: "Video queued for another attempt.",
		Video:   wire.UploadedVideo{ID: id, Filename: v.Filename, Status: domain.StatusPending, Collection: v.Collection},
	})
	return nil
}
