package httpapi

import (
	"net/http"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/wire"
)

// The API's resources are the types of transport/wire, shared with the
// webhook bodies and the Go client; this file turns read-model records
// into them.

// renderVideo renders v for the answer to r (whose origin the media URLs
// name when --cdn-url is unset).
func (s *Server) renderVideo(r *http.Request, v projections.Video) wire.Video {
	var frac float64
	if v.Status == domain.StatusProcessing && s.cfg.Progress != nil {
		frac, _ = s.cfg.Progress.Get(v.ID)
	}
	return wire.NewVideo(videoRecord(v), s.cdnURL(r), wire.Live{Progress: frac})
}

// videoRecord is what the Video resource is rendered from.
func videoRecord(v projections.Video) wire.VideoRecord {
	return wire.VideoRecord{
		ID: v.ID, Filename: v.Filename, Status: v.Status, Duration: v.Duration,
		OriginalSize: v.OriginalSize, ProcessedSize: v.ProcessedSize, Resolutions: v.Resolutions,
		ErrorMessage: v.ErrorMessage, Collection: v.Collection, CollectionName: v.CollectionName,
		CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
		PlaybackPolicy: v.PlaybackPolicy, Playable: v.Playable, Storyboard: v.Storyboard, Download: v.Download,
	}
}

func renderCollection(c projections.Collection) wire.Collection {
	return wire.Collection{Slug: c.Slug, Name: c.Name, VideoCount: c.VideoCount,
		CreatedAt: domain.FormatTime(c.CreatedAt), UpdatedAt: domain.FormatTime(c.UpdatedAt),
		PlaybackPolicy: c.PlaybackPolicy.OrPublic(), Downloads: c.Downloads}
}

// renderWebhook never carries the secret; only the create response does.
func renderWebhook(w projections.Webhook) wire.Webhook {
	return wire.Webhook{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: domain.FormatTime(w.CreatedAt)}
}
