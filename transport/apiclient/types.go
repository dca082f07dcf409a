package apiclient

import (
	"encoding/json"
	"time"

	"github.com/kino-video/kino/transport/wire"
)

// Status is a video's processing status.
type Status string

// The four statuses (spec §3).
const (
	StatusPending    Status = "PENDING"    // uploaded, waiting for a worker
	StatusProcessing Status = "PROCESSING" // being transcoded
	StatusCompleted  Status = "COMPLETED"  // ready: the media URLs are set
	StatusFailed     Status = "FAILED"     // ErrorMessage says why
)

// Done reports whether s is final (COMPLETED or FAILED).
func (s Status) Done() bool { return s == StatusCompleted || s == StatusFailed }

// EventType is a webhook event kind.
type EventType string

// Webhook event kinds.
const (
	EventVideoCompleted EventType = "video.completed"
	EventVideoFailed    EventType = "video.failed"
	// EventVideoPlayable is kino's addition: the video plays already, while
	// PROCESSING (sent once per processing run, before video.completed).
	EventVideoPlayable EventType = "video.playable"
	// EventVideoCreated, EventVideoUpdated and EventVideoDeleted are
	// kino's additions too: the upload was accepted; the details or the
	// playback policy changed; the video was deleted (the body holds it as
	// it was).
	EventVideoCreated EventType = "video.created"
	EventVideoUpdated EventType = "video.updated"
	EventVideoDeleted EventType = "video.deleted"
	// EventVideoCaptionsReady and EventVideoCaptionsFailed: a text track
	// is READY (uploaded, or generated) or its generation FAILED
	// (WebhookEvent.Track).
	EventVideoCaptionsReady  EventType = "video.captions.ready"
	EventVideoCaptionsFailed EventType = "video.captions.failed"
	EventWebhookTest         EventType = "webhook.test" // POST /v1/webhooks/{id}/test; never subscribed to
)

// Video is the Video resource (spec §2). The nullable fields are nil until
// they are known. It encodes to JSON exactly as the API writes it.
type Video struct {
	ID            string
	Filename      string
	Status        Status
	Duration      *float64 // seconds; COMPLETED only
	OriginalSize  int64    // bytes uploaded
	ProcessedSize *int64   // bytes of all outputs; COMPLETED only
	PlaylistURL   *string  // HLS master playlist; COMPLETED only
	ThumbnailURL  *string  // JPEG; COMPLETED only
	PreviewURL    *string  // MP4 clip; COMPLETED only
	Resolutions   []string // e.g. ["720p", "480p"]; empty until COMPLETED
	ErrorMessage  *string  // FAILED only
	Collection    CollectionRef
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Progress is kino's addition: 0 while PENDING, 0..1 while
	// PROCESSING, 1 when COMPLETED, nil when FAILED.
	Progress *float64
	// The rest are kino's additions too.
	//
	// PlaybackPolicy is PlaybackPublic or PlaybackSigned: a signed video's
	// media need a playback token (WithToken); its URLs here never carry
	// one.
	PlaybackPolicy PlaybackPolicy
	StoryboardURL  *string  // WebVTT thumbnails track; COMPLETED only, when made
	DownloadURL    *string  // MP4 download; COMPLETED only, when downloads are on
	Speed          *float64 // × real time; PROCESSING only, once known
	ETA            *float64 // seconds left; PROCESSING only, once known
	QueuePosition  *int     // 1 = next to start; PENDING only, when known
	// The video's details: Title is never empty (the filename without
	// its extension unless one was given).
	Details
	// Captions are its text tracks.
	Captions []CaptionTrack
	// ThumbnailTime is the moment the thumbnail was asked at (nil: kino's
	// choice); AnimatedPreviewURL a looping animated WebP of a few seconds
	// from it (COMPLETED only, when made).
	ThumbnailTime      *float64
	AnimatedPreviewURL *string
}

// Done reports whether processing is over.
func (v Video) Done() bool { return v.Status.Done() }

// CollectionRef names a video's collection.
type CollectionRef = wire.CollectionRef

func videoFrom(w wire.Video) Video {
	return Video{ID: w.ID, Filename: w.Filename, Status: Status(w.Status), Duration: w.Duration,
		OriginalSize: w.OriginalSize, ProcessedSize: w.ProcessedSize, PlaylistURL: w.PlaylistURL,
		ThumbnailURL: w.ThumbnailURL, PreviewURL: w.PreviewURL, Resolutions: w.Resolutions,
		ErrorMessage: w.ErrorMessage, Collection: w.Collection,
		CreatedAt: parseTime(w.CreatedAt), UpdatedAt: parseTime(w.UpdatedAt), Progress: w.Progress,
		PlaybackPolicy: PlaybackPolicy(w.PlaybackPolicy), StoryboardURL: w.StoryboardURL, DownloadURL: w.DownloadURL,
		Speed: w.Speed, ETA: w.ETA, QueuePosition: w.QueuePosition,
		Details: Details{Title: w.Title, Description: w.Description, Tags: w.Tags, Metadata: w.Metadata}, Captions: w.Captions,
		ThumbnailTime: w.ThumbnailTime, AnimatedPreviewURL: w.AnimatedPreviewURL}
}

func (v Video) wire() wire.Video {
	res := v.Resolutions
	if res == nil {
		res = []string{}
	}
	w := wire.Video{ID: v.ID, Filename: v.Filename, Duration: v.Duration,
		OriginalSize: v.OriginalSize, ProcessedSize: v.ProcessedSize, PlaylistURL: v.PlaylistURL,
		ThumbnailURL: v.ThumbnailURL, PreviewURL: v.PreviewURL, Resolutions: res,
		ErrorMessage: v.ErrorMessage, Collection: v.Collection,
		CreatedAt: formatTime(v.CreatedAt), UpdatedAt: formatTime(v.UpdatedAt), Progress: v.Progress,
		StoryboardURL: v.StoryboardURL, DownloadURL: v.DownloadURL, Speed: v.Speed, ETA: v.ETA, QueuePosition: v.QueuePosition,
		Title: v.Title, Description: v.Description, Tags: v.Tags, Metadata: v.Metadata, Captions: v.Captions,
		ThumbnailTime: v.ThumbnailTime, AnimatedPreviewURL: v.AnimatedPreviewURL}
	if w.Captions == nil {
		w.Captions = []CaptionTrack{}
	}
	if w.Tags == nil {
		w.Tags = []string{}
	}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	setString(&w.Status, string(v.Status))
	setString(&w.PlaybackPolicy, string(v.PlaybackPolicy))
	return w
}

// setString sets a string-typed field of the wire types without naming
// its type (the client does not import kino's domain).
func setString[S ~string](dst *S, v string) { *dst = S(v) }

// MarshalJSON writes v as the API does.
func (v Video) MarshalJSON() ([]byte, error) { return json.Marshal(v.wire()) }

// UnmarshalJSON reads the API's Video.
func (v *Video) UnmarshalJSON(b []byte) error {
	var w wire.Video
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*v = videoFrom(w)
	return nil
}

// Uploaded is the 202 answer to a multipart upload.
type Uploaded struct {
	Message string        `json:"message"`
	Video   UploadedVideo `json:"video"`
}

// UploadedVideo is the video of an Uploaded answer.
type UploadedVideo struct {
	ID         string `json:"id"`
	Filename   string `json:"filename"`
	Status     Status `json:"status"`
	Collection string `json:"collection"` // the slug
}

// Collection is a collection of videos.
type Collection struct {
	Slug       string
	Name       string
	VideoCount int
	CreatedAt  time.Time
	UpdatedAt  time.Time // changes on rename and settings changes
	// PlaybackPolicy and Downloads are kino's additions: the defaults of
	// the videos uploaded into the collection from now on.
	PlaybackPolicy PlaybackPolicy
	Downloads      bool
	// EmbedOrigins are the sites whose pages may frame its videos' /embed
	// and /play (empty: the server's default).
	EmbedOrigins []string
}

func collectionFrom(w wire.Collection) Collection {
	return Collection{Slug: w.Slug, Name: w.Name, VideoCount: w.VideoCount,
		CreatedAt: parseTime(w.CreatedAt), UpdatedAt: parseTime(w.UpdatedAt),
		PlaybackPolicy: PlaybackPolicy(w.PlaybackPolicy), Downloads: w.Downloads, EmbedOrigins: w.EmbedOrigins}
}

// Webhook is a subscription, without its secret.
type Webhook struct {
	ID        string
	URL       string
	Events    []EventType
	CreatedAt time.Time
}

func webhookFrom(w wire.Webhook) Webhook {
	return Webhook{ID: w.ID, URL: w.URL, Events: eventTypes(w.Events), CreatedAt: parseTime(w.CreatedAt)}
}

func eventTypes(s []string) []EventType {
	out := make([]EventType, len(s))
	for i, e := range s {
		out[i] = EventType(e)
	}
	return out
}

// CreatedWebhook is a new subscription with its signing secret, which the
// API shows only this once: keep it (ReadWebhook needs it).
type CreatedWebhook struct {
	Webhook
	Secret string // whsec_...
}

// Delivery is one attempt in a subscription's deliveries log.
type Delivery struct {
	DeliveryID string    // the x-svc-delivery header; shared by the attempts of one delivery
	EventID    string    // the body's id
	Event      EventType // video.completed, video.failed, video.playable or webhook.test
	VideoID    string    // "" for webhook.test
	Attempt    int       // 1, 2, ...
	Succeeded  bool      // a 2xx within the timeout
	GaveUp     bool      // this failed attempt was the last
	StatusCode int       // the receiver's status; 0 when none came
	Error      string    // why it failed; "" on success
	Duration   time.Duration
	At         time.Time // when the attempt ended
}

func deliveryFrom(w wire.Delivery) Delivery {
	d := Delivery{DeliveryID: w.DeliveryID, EventID: w.EventID, Event: EventType(w.Event), Attempt: w.Attempt,
		Succeeded: w.Succeeded, GaveUp: w.GaveUp, Duration: time.Duration(w.DurationMs) * time.Millisecond, At: parseTime(w.At)}
	if w.VideoID != nil {
		d.VideoID = *w.VideoID
	}
	if w.StatusCode != nil {
		d.StatusCode = *w.StatusCode
	}
	if w.Error != nil {
		d.Error = *w.Error
	}
	return d
}

// Event is one entry of a video's history (GET /v1/videos/{id}/events).
type Event struct {
	Seq        uint64          // its sequence in kino's event stream
	ID         string          // the event's id
	Type       string          // UploadAccepted, TranscodeStarted, TranscodePlayable, ... (docs/events.md)
	Version    int             // schema version
	OccurredAt time.Time       //
	Data       json.RawMessage // the payload, per Type
}

// parseTime reads the API's timestamps (ISO 8601 UTC with milliseconds);
// the zero time when s is not one.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// formatTime writes t as the API does.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
