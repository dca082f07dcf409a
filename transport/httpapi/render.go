package httpapi

import (
	"net/http"

	"github.com/kino-video/kino/transport/httpapi/captions"

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
// account's PENDING index per answer, at most maxQueuePosition keys).
func (s *Server) renderVideos(r *http.Request, vs []projections.Video) []wire.Video {
	cdn := s.cdnURL(r)
	lives := make([]wire.Live, len(vs))
	pending := map[string][]int{} // account -> indexes into vs
	for i, v := range vs {
		switch v.Status {
		case domain.StatusProcessing:
			if s.cfg.Progress != nil {
				if rep, ok := s.cfg.Progress.Live(v.ID); ok {
					lives[i].Progress, lives[i].Speed, lives[i].ETA = rep.Progress, rep.Speed, rep.ETA
				}
			}
		case domain.StatusPending:
			pending[v.Account] = append(pending[v.Account], i)
		}
	}
	for account, idx := range pending {
		seqs := make([]uint64, len(idx))
		for j, i := range idx {
			seqs[j] = vs[i].CreatedSeq
		}
		pos, err := s.cfg.DB.QueuePositions(account, seqs, maxQueuePosition)
		if err != nil {
			logger(r, s.cfg.Log).Warn("queue positions", "err", err)
			continue
		}
		for j, i := range idx {
			if pos[j] > 0 {
				lives[i].QueuePosition = &pos[j]
			}
		}
	}
	out := make([]wire.Video, len(vs))
	for i, v := range vs {
		out[i] = wire.NewVideo(videoRecord(v), cdn, lives[i])
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
		Details: v.Details(), Captions: captionRecords(v.Captions), ThumbnailTime: v.ThumbnailTime, Animated: v.Animated,
	}
}

func renderCollection(c projections.Collection) wire.Collection {
	out := wire.Collection{Slug: c.Slug, Name: c.Name, VideoCount: c.VideoCount,
		CreatedAt: domain.FormatTime(c.CreatedAt), UpdatedAt: domain.FormatTime(c.UpdatedAt),
		PlaybackPolicy: c.PlaybackPolicy.OrPublic(), Downloads: c.Downloads, EmbedOrigins: c.EmbedOrigins}
	if out.EmbedOrigins == nil {
		out.EmbedOrigins = []string{}
	}
	return out
}

func captionRecords(cs []projections.Caption) []wire.CaptionRecord {
	out := make([]wire.CaptionRecord, len(cs))
	for i, c := range cs {
		out[i] = captions.Record(c)
	}
	return out
}
