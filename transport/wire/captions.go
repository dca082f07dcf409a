package wire

import (
	"time"

	"github.com/kino-video/kino/domain"
)

// CaptionTrack is a text track of a video: in the Video resource's
// captions, and the answer of /v1/videos/{id}/captions.
type CaptionTrack struct {
	ID       string `json:"id"`
	Language string `json:"language"` // BCP 47, canonical ("en", "pt-BR")
	Label    string `json:"label"`    // what a player's menu shows
	Default  bool   `json:"default"`
	// Source is "uploaded" or "generated" (speech recognition).
	Source string `json:"source"`
	// Status is READY, or PENDING then READY or FAILED while generated.
	Status       domain.CaptionStatus `json:"status"`
	ErrorMessage *string              `json:"errorMessage"`
	// Cues is how many cues the track holds (0 until READY).
	Cues int `json:"cues"`
	// URL is the track's WebVTT (READY only; null else). Its playlist,
	// a subtitles rendition in the video's master playlist, is beside it.
	URL       *string `json:"url"`
	CreatedAt string  `json:"createdAt"`
}

// CaptionTracks is the answer of GET /v1/videos/{id}/captions.
type CaptionTracks struct {
	Data []CaptionTrack `json:"data"`
}

// CaptionRecord is what a CaptionTrack is rendered from.
type CaptionRecord struct {
	ID, Language, Label, Source string
	Default                     bool
	Status                      domain.CaptionStatus
	ErrorMessage                string
	Cues                        int
	CreatedAt                   time.Time
}

// CaptionDir is where a video's text tracks are, under
// {cdn_url}/{videoId}/: <track id>.m3u8 (the rendition's playlist) and
// <track id>.vtt (its cues).
const CaptionDir = "hls/captions/"

// NewCaptionTrack renders c, a track of video id; cdnURL as NewVideo's.
func NewCaptionTrack(c CaptionRecord, cdnURL, id string) CaptionTrack {
	out := CaptionTrack{ID: c.ID, Language: c.Language, Label: c.Label, Default: c.Default, Source: c.Source,
		Status: c.Status, Cues: c.Cues, CreatedAt: domain.FormatTime(c.CreatedAt)}
	if c.ErrorMessage != "" {
		msg := c.ErrorMessage
		out.ErrorMessage = &msg
	}
	if c.Status == domain.CaptionReady {
		u := cdnURL + "/" + id + "/" + CaptionDir + c.ID + ".vtt"
		out.URL = &u
	}
	return out
}
