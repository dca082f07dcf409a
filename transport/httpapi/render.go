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
	return s.renderVideos(r, []projections.Video{v})[0]
}

// maxQueuePosition is how far into an account's PENDING videos a queue
// position is counted; those further back show null.
const maxQueuePosition = 1000

// renderVideos renders vs for the answer to r, with what is live beside
// the records: progress, speed and time left of PROCESSING videos (the
// workers' reports), queue positions of PENDING ones (one walk of each
// account's PENDING index, at most maxQueuePosition keys, per answer).
func (s *Server) renderVideos(r *http.Request, vs []projections.Video) []wire.Video {
	cdn := s.cdnURL(r)
	var queues map[string]map[string]int
	out := make([]wire.Video, len(vs))
	for i, v := range vs {
		var live wire.Live
		switch v.Status {
		case domain.StatusProcessing:
			if s.cfg.Progress != nil {
				if rep, ok := s.cfg.Progress.Live(v.ID); ok {
					live.Progress, live.Speed, live.ETA = rep.Progress, rep.Speed, rep.ETA
				}
			}
		case domain.StatusPending:
			q, ok := queues[v.Account]
			if !ok {
				var err error
				if q, err = s.cfg.DB.QueuePositions(v.Account, maxQueuePosition); err != nil {
					logger(r, s.cfg.Log).Warn("queue positions", "err", err)
				}
				if queues == nil {
					queues = map[string]map[string]int{}
				}
				queues[v.Account] = q
			}
			if n, ok := q[v.ID]; ok {
				live.QueuePosition = &n
			}
		}
		out[i] = wire.NewVideo(videoRecord(v), cdn, live)
	}
	return out
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
