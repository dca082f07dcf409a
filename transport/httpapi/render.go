package httpapi

import (
	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/media"
)

// VideoResource is the Video resource of spec §2: every field present,
// nulls as null, in the spec's order. Webhook deliveries carry it too.
type VideoResource struct {
	ID            string        `json:"id"`
	Filename      string        `json:"filename"`
	Status        domain.Status `json:"status"`
	Duration      *float64      `json:"duration"`
	OriginalSize  int64         `json:"originalSize"`
	ProcessedSize *int64        `json:"processedSize"`
	PlaylistURL   *string       `json:"playlistUrl"`
	ThumbnailURL  *string       `json:"thumbnailUrl"`
	PreviewURL    *string       `json:"previewUrl"`
	Resolutions   []string      `json:"resolutions"`
	ErrorMessage  *string       `json:"errorMessage"`
	Collection    collectionRef `json:"collection"`
	CreatedAt     string        `json:"createdAt"`
	UpdatedAt     string        `json:"updatedAt"`
	// Progress is kino's addition: 0 while PENDING, 0..1 while
	// PROCESSING, 1 when COMPLETED, null when FAILED.
	Progress *float64 `json:"progress"`
}

type collectionRef struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

func (s *Server) renderVideo(v projections.Video) VideoResource {
	return NewVideoResource(v, s.cfg.CDNURL, s.cfg.Progress)
}

// NewVideoResource builds the Video resource. Media URLs are derived from
// cdnURL ({cdn_url}, no trailing slash) when the video is COMPLETED, so
// changing --cdn-url changes every record. progress may be nil.
func NewVideoResource(v projections.Video, cdnURL string, progress ProgressSource) VideoResource {
	res := v.Resolutions
	if res == nil {
		res = []string{}
	}
	out := VideoResource{
		ID: v.ID, Filename: v.Filename, Status: v.Status,
		Duration: v.Duration, OriginalSize: v.OriginalSize, ProcessedSize: v.ProcessedSize,
		Resolutions: res, ErrorMessage: v.ErrorMessage,
		Collection: collectionRef{Slug: v.Collection, Name: v.CollectionName},
		CreatedAt:  domain.FormatTime(v.CreatedAt), UpdatedAt: domain.FormatTime(v.UpdatedAt),
	}
	var frac float64
	switch v.Status {
	case domain.StatusCompleted:
		base := cdnURL + "/" + v.ID + "/"
		playlist, thumb, preview := base+media.HLSDir+"/"+media.MasterName, base+media.ThumbnailName, base+media.PreviewName
		out.PlaylistURL, out.ThumbnailURL, out.PreviewURL = &playlist, &thumb, &preview
		frac = 1
		out.Progress = &frac
	case domain.StatusProcessing:
		if progress != nil {
			frac, _ = progress.Get(v.ID)
		}
		out.Progress = &frac
	case domain.StatusPending:
		out.Progress = &frac
	}
	return out
}

type collectionJSON struct {
	Slug       string `json:"slug"`
	Name       string `json:"name"`
	VideoCount int    `json:"videoCount"`
	CreatedAt  string `json:"createdAt"`
	UpdatedAt  string `json:"updatedAt"`
}

func renderCollection(c projections.Collection) collectionJSON {
	return collectionJSON{Slug: c.Slug, Name: c.Name, VideoCount: c.VideoCount,
		CreatedAt: domain.FormatTime(c.CreatedAt), UpdatedAt: domain.FormatTime(c.UpdatedAt)}
}

// webhookJSON never carries the secret; only the create response does.
type webhookJSON struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt string   `json:"createdAt"`
}

func renderWebhook(w projections.Webhook) webhookJSON {
	return webhookJSON{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: domain.FormatTime(w.CreatedAt)}
}

type messageJSON struct {
	Message string `json:"message"`
}
