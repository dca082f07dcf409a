// Package wire holds kino's /v1 resources as they travel: the JSON the API
// answers, the bodies its webhooks carry and what its Go client reads. Each
// shape is defined here once; httpapi renders into these types, the
// webhook fan-out builds its bodies from them and apiclient decodes them.
//
// Field order is JSON order: changing it changes the bytes every client
// and receiver sees (docs/openapi.yaml is checked against the API by the
// contract tests, and testdata/*.golden holds each shape).
package wire

import (
	"time"

	"github.com/kino-video/kino/domain"
)

// Video is the Video resource (spec §2): every field present, nulls as
// null, in the spec's order, plus kino's progress.
type Video struct {
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
	Collection    CollectionRef `json:"collection"`
	CreatedAt     string        `json:"createdAt"`
	UpdatedAt     string        `json:"updatedAt"`
	// Progress is kino's addition: 0 while PENDING, 0..1 while
	// PROCESSING, 1 when COMPLETED, null when FAILED.
	Progress *float64 `json:"progress"`
	// The rest are kino's additions too, after the contract's
	// fields so that its clients read what they always read.
	//
	// PlaybackPolicy is "public" or "signed": a signed video's media need
	// ?token=<playback token>; its URLs here never carry one.
	PlaybackPolicy domain.PlaybackPolicy `json:"playbackPolicy"`
	// StoryboardURL is the WebVTT thumbnails track (its cues point into one
	// sprite sheet JPEG); null until COMPLETED, and for videos without one.
	StoryboardURL *string `json:"storyboardUrl"`
	// DownloadURL is the MP4 download (at most 1080p, moov first); null
	// until COMPLETED, and when downloads were off for the video.
	DownloadURL *string `json:"downloadUrl"`
	// Speed is the encode's speed in multiples of real time and ETA the
	// seconds it should still take: PROCESSING only, once known; else null.
	Speed *float64 `json:"speed"`
	ETA   *float64 `json:"eta"`
	// QueuePosition is 1 for the next of the account's PENDING videos to
	// start, 2 for the one after it...: PENDING only, null when unknown.
	QueuePosition *int `json:"queuePosition"`
	// The application's details of the video: title (the filename without
	// its extension unless one was given), description ("" when none),
	// tags ([] when none) and metadata ({} when none).
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Tags        []string          `json:"tags"`
	Metadata    map[string]string `json:"metadata"`
	// Captions are the video's text tracks ([] when none).
	Captions []CaptionTrack `json:"captions"`
	// ThumbnailTime is the moment (seconds) the thumbnail was asked at;
	// null: kino's choice, a tenth of the way in.
	ThumbnailTime *float64 `json:"thumbnailTime"`
	// AnimatedPreviewURL is a few seconds from the thumbnail's moment as
	// a small looping animated WebP, for hover previews in lists; null
	// until COMPLETED, and for videos without one.
	AnimatedPreviewURL *string `json:"animatedPreviewUrl"`
}

// Done reports whether processing is over.
func (v Video) Done() bool {
	return v.Status == domain.StatusCompleted || v.Status == domain.StatusFailed
}

// CollectionRef names a video's collection.
type CollectionRef struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// VideoRecord is what a Video is rendered from: a read model's record
// (httpapi) or a video folded from its events (the webhook fan-out).
type VideoRecord struct {
	ID             string
	Filename       string
	Status         domain.Status
	Duration       *float64
	OriginalSize   int64
	ProcessedSize  *int64
	Resolutions    []string
	ErrorMessage   *string
	Collection     string // slug
	CollectionName string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	PlaybackPolicy domain.PlaybackPolicy // "" is public
	Playable       bool                  // PROCESSING and TranscodePlayable recorded: playlistUrl is set
	Storyboard     bool                  // COMPLETED with storyboard outputs
	Download       bool                  // COMPLETED with download.mp4
	Details        domain.Details
	Captions       []CaptionRecord
	ThumbnailTime  *float64
	Animated       bool // COMPLETED with preview.webp
}

// Live is what changes while a video waits or is processed, kept beside
// its record (the progress bucket, the job queue): used only in the status
// it belongs to; nil pointers render as null.
type Live struct {
	Progress      float64  // PROCESSING: 0..1
	Speed         *float64 // PROCESSING: × real time
	ETA           *float64 // PROCESSING: seconds left
	QueuePosition *int     // PENDING
}

// Where a completed video's media are, under {cdn_url}/{videoId}/.
const (
	PlaylistPath  = "hls/master.m3u8"
	ThumbnailPath = "thumbnail.jpg"
	PreviewPath   = "preview.mp4"
	// StoryboardPath is the WebVTT track; its cues point into
	// StoryboardImagePath (#xywh= regions of one sprite sheet).
	StoryboardPath      = "storyboard.vtt"
	StoryboardImagePath = "storyboard.jpg"
	DownloadPath        = "download.mp4"
	AnimatedPath        = "preview.webp"
)

// NewVideo renders r. Media URLs are derived from cdnURL ({cdn_url}, no
// trailing slash) when the video is COMPLETED (the playlist's also while
// it is PROCESSING and playable), so changing --cdn-url changes every
// record. live is used only in the status each field belongs to.
func NewVideo(r VideoRecord, cdnURL string, live Live) Video {
	res := r.Resolutions
	if res == nil {
		res = []string{}
	}
	out := Video{
		ID: r.ID, Filename: r.Filename, Status: r.Status,
		Duration: r.Duration, OriginalSize: r.OriginalSize, ProcessedSize: r.ProcessedSize,
		Resolutions: res, ErrorMessage: r.ErrorMessage,
		Collection: CollectionRef{Slug: r.Collection, Name: r.CollectionName},
		CreatedAt:  domain.FormatTime(r.CreatedAt), UpdatedAt: domain.FormatTime(r.UpdatedAt),
		PlaybackPolicy: r.PlaybackPolicy.OrPublic(),
		Title:          r.Details.Title, Description: r.Details.Description, Tags: r.Details.Tags, Metadata: r.Details.Metadata,
	}
	if out.Title == "" {
		out.Title = domain.DefaultTitle(r.Filename)
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	out.ThumbnailTime = r.ThumbnailTime
	out.Captions = make([]CaptionTrack, len(r.Captions))
	for i, c := range r.Captions {
		out.Captions[i] = NewCaptionTrack(c, cdnURL, r.ID)
	}
	base := cdnURL + "/" + r.ID + "/"
	var frac float64
	switch r.Status {
	case domain.StatusCompleted:
		playlist, thumb, preview := base+PlaylistPath, base+ThumbnailPath, base+PreviewPath
		out.PlaylistURL, out.ThumbnailURL, out.PreviewURL = &playlist, &thumb, &preview
		if r.Storyboard {
			sb := base + StoryboardPath
			out.StoryboardURL = &sb
		}
		if r.Download {
			dl := base + DownloadPath
			out.DownloadURL = &dl
		}
		if r.Animated {
			a := base + AnimatedPath
			out.AnimatedPreviewURL = &a
		}
		frac = 1
	case domain.StatusProcessing:
		frac = live.Progress
		if r.Playable {
			playlist := base + PlaylistPath
			out.PlaylistURL = &playlist
		}
		out.Speed, out.ETA = live.Speed, live.ETA
	case domain.StatusPending:
		out.QueuePosition = live.QueuePosition
	default: // FAILED: null
		return out
	}
	out.Progress = &frac
	return out
}

// Collection is a collection resource.
type Collection struct {
	Slug       string `json:"slug"`
	Name       string `json:"name"`
	VideoCount int    `json:"videoCount"`
	CreatedAt  string `json:"createdAt"`
	UpdatedAt  string `json:"updatedAt"`
	// kino's additions: the defaults of the collection's new videos.
	PlaybackPolicy domain.PlaybackPolicy `json:"playbackPolicy"`
	Downloads      bool                  `json:"downloads"`
	// EmbedOrigins are the sites whose pages may frame its videos' /embed
	// and /play ([]: the server's default).
	EmbedOrigins []string `json:"embedOrigins"`
}

// PlaybackToken is the 201 answer to POST /v1/videos/{id}/playback-tokens.
type PlaybackToken struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
}

// SigningKey is a signing key as listed: never with its private key.
type SigningKey struct {
	ID        string `json:"id"`
	Algorithm string `json:"algorithm"` // "EdDSA"
	Label     string `json:"label"`
	CreatedAt string `json:"createdAt"`
}

// CreatedSigningKey is the 201 answer to POST /v1/signing-keys: the only
// time the private key is shown (PKCS#8 PEM, Ed25519). kino keeps only the
// public half.
type CreatedSigningKey struct {
	ID         string `json:"id"`
	Algorithm  string `json:"algorithm"`
	Label      string `json:"label"`
	PrivateKey string `json:"privateKey"`
	CreatedAt  string `json:"createdAt"`
}

// SigningKeys is the list answer of GET /v1/signing-keys.
type SigningKeys struct {
	SigningKeys []SigningKey `json:"signingKeys"`
}

// Webhook is a subscription as listed and read: never with its secret.
type Webhook struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt string   `json:"createdAt"`
}

// CreatedWebhook is the 201 answer to POST /v1/webhooks: the only time
// the signing secret is shown.
type CreatedWebhook struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	Secret    string   `json:"secret"`
	CreatedAt string   `json:"createdAt"`
}

// Delivery is one attempt in a subscription's deliveries log.
type Delivery struct {
	DeliveryID string  `json:"deliveryId"`
	EventID    string  `json:"eventId"`
	Event      string  `json:"event"`
	VideoID    *string `json:"videoId"`
	Attempt    int     `json:"attempt"`
	Succeeded  bool    `json:"succeeded"`
	GaveUp     bool    `json:"gaveUp"`
	StatusCode *int    `json:"statusCode"`
	Error      *string `json:"error"`
	DurationMs int64   `json:"durationMs"`
	At         string  `json:"at"`
}

// Event is one entry of a video's audit history.
type Event struct {
	Seq        uint64 `json:"seq"`
	ID         string `json:"id"`
	Type       string `json:"type"`
	Version    int    `json:"version"`
	OccurredAt string `json:"occurredAt"`
	Data       any    `json:"data"`
}

// Error is the one error body of the API.
type Error struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Message is the body of answers that only say what happened.
type Message struct {
	Message string `json:"message"`
}

// Uploaded is the 202 answer to an upload.
type Uploaded struct {
	Message string        `json:"message"`
	Video   UploadedVideo `json:"video"`
}

// UploadedVideo is the video of an Uploaded answer.
type UploadedVideo struct {
	ID         string        `json:"id"`
	Filename   string        `json:"filename"`
	Status     domain.Status `json:"status"`
	Collection string        `json:"collection"`
}

// TestQueued is the 202 answer to POST /v1/webhooks/{id}/test.
type TestQueued struct {
	Message    string `json:"message"`
	DeliveryID string `json:"deliveryId"`
}

// Lists.
type (
	Videos struct {
		Videos []Video `json:"videos"`
		// NextCursor continues the listing after its last video (the
		// cursor parameter); null on the last page.
		NextCursor *string `json:"nextCursor"`
	}
	Collections struct {
		Collections []Collection `json:"collections"`
	}
	Webhooks struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	Deliveries struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	Events struct {
		Events []Event `json:"events"`
	}
)

// WebhookBody is what a receiver gets: {"id": <event id>, "type",
// "createdAt", "data": {"video": Video}} for video.completed and
// video.failed, {"data": {"webhook": ...}} for webhook.test.
type WebhookBody struct {
	ID        string      `json:"id"`        // the event's id
	Type      string      `json:"type"`      // video.completed, video.failed, webhook.test
	CreatedAt string      `json:"createdAt"` // when the event happened
	Data      WebhookData `json:"data"`
}

// WebhookData holds exactly one of its fields.
type WebhookData struct {
	Video   *Video       `json:"video,omitempty"`
	Webhook *TestWebhook `json:"webhook,omitempty"`
	// Track is the text track a video.captions.* event is about (also
	// among the video's captions).
	Track *CaptionTrack `json:"track,omitempty"`
}

// TestWebhook is the subscription a webhook.test delivery is about.
// (Fields in the order the first version wrote them.)
type TestWebhook struct {
	Events []string `json:"events"`
	ID     string   `json:"id"`
	URL    string   `json:"url"`
}

// DirectUpload answers POST /v1/uploads: a tus creation URL that needs no
// Authorization, for one upload, until ExpiresAt; ID is the future video's.
type DirectUpload struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"`
}

// UnfinishedUpload is one unfinished tus upload, as GET /v1/uploads lists
// it (the caller account's, held by the answering node).
type UnfinishedUpload struct {
	ID         string `json:"id"`
	Filename   string `json:"filename"`
	Collection string `json:"collection"`
	Length     int64  `json:"length"`
	Offset     int64  `json:"offset"`
	CreatedAt  string `json:"createdAt"`
	ExpiresAt  string `json:"expiresAt"`
	Direct     bool   `json:"direct"` // created through a direct upload URL
}
