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
}

// Where a completed video's media are, under {cdn_url}/{videoId}/.
const (
	PlaylistPath  = "hls/master.m3u8"
	ThumbnailPath = "thumbnail.jpg"
	PreviewPath   = "preview.mp4"
)

// NewVideo renders r. Media URLs are derived from cdnURL ({cdn_url}, no
// trailing slash) when the video is COMPLETED, so changing --cdn-url
// changes every record. progress is used only while PROCESSING.
func NewVideo(r VideoRecord, cdnURL string, progress float64) Video {
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
	}
	var frac float64
	switch r.Status {
	case domain.StatusCompleted:
		base := cdnURL + "/" + r.ID + "/"
		playlist, thumb, preview := base+PlaylistPath, base+ThumbnailPath, base+PreviewPath
		out.PlaylistURL, out.ThumbnailURL, out.PreviewURL = &playlist, &thumb, &preview
		frac = 1
	case domain.StatusProcessing:
		frac = progress
	case domain.StatusPending:
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
