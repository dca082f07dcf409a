package httpapi

import (
	"net/http"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/wire"
)

// listUploads answers GET /v1/uploads: the caller's unfinished tus
// uploads held by this node, so that an account at its cap of unfinished
// uploads (maxUnfinished) can find them, and resume or DELETE them at
// /v1/uploads/tus/{id} (direct ones too: the account owns them).
func (s *Server) listUploads(w http.ResponseWriter, r *http.Request) error {
	out := []wire.UnfinishedUpload{}
	if s.tus != nil {
		for _, u := range s.tus.Unfinished(callerOf(r).Account, s.cfg.Now()) {
			out = append(out, wire.UnfinishedUpload{ID: u.ID, Filename: u.Filename, Collection: u.Collection,
				Length: u.Length, Offset: u.ResumeOffset(), CreatedAt: domain.FormatTime(u.Created),
				ExpiresAt: domain.FormatTime(u.Expires), Direct: u.Direct != ""})
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, map[string]any{"data": out})
	return nil
}
