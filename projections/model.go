package projections

import (
	"time"

	"github.com/kino-video/kino/domain"
)

// Video is the read model of one video: what GET /v1/videos/{id} answers.
type Video struct {
	ID             string        `json:"id"`
	Account        string        `json:"account"`
	Filename       string        `json:"filename"`
	Ext            string        `json:"ext"`
	Status         domain.Status `json:"status"`
	Duration       *float64      `json:"duration"`
	OriginalSize   int64         `json:"originalSize"`
	ProcessedSize  *int64        `json:"processedSize"`
	Resolutions    []string      `json:"resolutions"`
	ErrorMessage   *string       `json:"errorMessage"`
	Collection     string        `json:"collection"`
	CollectionName string        `json:"collectionName"`
	CreatedAt      time.Time     `json:"createdAt"`
	UpdatedAt      time.Time     `json:"updatedAt"`
	CreatedSeq     uint64        `json:"createdSeq"` // orders the indexes: newest first
	// PlaybackPolicy is "public" or "signed" (never empty in a record).
	PlaybackPolicy domain.PlaybackPolicy `json:"playbackPolicy"`
	// Playable: the running attempt recorded TranscodePlayable (PROCESSING
	// videos only; a new attempt or a retry clears it).
	Playable bool `json:"playable,omitempty"`
	// Storyboard and Download: the COMPLETED video has those outputs.
	Storyboard bool `json:"storyboard,omitempty"`
	Download   bool `json:"download,omitempty"`
	// WantsDownload: the upload asked for the download rendition.
	WantsDownload bool `json:"wantsDownload,omitempty"`
	// Width and Height are the source's displayed size (COMPLETED).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// The video's details (domain.Details, normalized): the title is never
	// empty.
	Title       string            `json:"title"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	// Captions are its text tracks, in the order added (their cues are
	// in the captions bucket).
	Captions []Caption `json:"captions,omitempty"`
	// ThumbnailTime is the moment asked for the thumbnail (nil: kino's
	// choice); Animated: the COMPLETED video has preview.webp.
	ThumbnailTime *float64 `json:"thumbnailTime,omitempty"`
	Animated      bool     `json:"animated,omitempty"`
}

// Caption is one text track of a video.
type Caption struct {
	ID           string               `json:"id"`
	Language     string               `json:"language"`
	Label        string               `json:"label"`
	Default      bool                 `json:"default,omitempty"`
	Source       string               `json:"source"`
	Status       domain.CaptionStatus `json:"status"`
	ErrorMessage string               `json:"errorMessage,omitempty"`
	Cues         int                  `json:"cues,omitempty"`
	CreatedAt    time.Time            `json:"createdAt"`
}

// Caption finds track id of v.
func (v Video) Caption(id string) (Caption, bool) {
	for _, c := range v.Captions {
		if c.ID == id {
			return c, true
		}
	}
	return Caption{}, false
}

// Details are the video's details.
func (v Video) Details() domain.Details {
	return domain.Details{Title: v.Title, Description: v.Description, Tags: v.Tags, Metadata: v.Metadata}
}

func (v *Video) setDetails(d domain.Details) {
	v.Title, v.Description, v.Tags, v.Metadata = d.Title, d.Description, d.Tags, d.Metadata
}

// Collection is the read model of one collection.
type Collection struct {
	Account    string    `json:"account"`
	Slug       string    `json:"slug"`
	Name       string    `json:"name"`
	VideoCount int       `json:"videoCount"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// The defaults of the collection's new videos.
	PlaybackPolicy domain.PlaybackPolicy `json:"playbackPolicy"`
	Downloads      bool                  `json:"downloads"`
	// EmbedOrigins may frame the collection's videos' pages (none: the
	// server's default).
	EmbedOrigins []string `json:"embedOrigins,omitempty"`
}

// SigningKey is a live signing key of an account: only its public half
// (Ed25519, base64url). Deleted keys are removed.
type SigningKey struct {
	ID        string    `json:"id"`
	Account   string    `json:"account"`
	Algorithm string    `json:"algorithm"`
	PublicKey string    `json:"publicKey"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
}

// Account is the read model of one account.
type Account struct {
	Slug      string      `json:"slug"`
	Plan      domain.Plan `json:"plan"`
	CreatedAt time.Time   `json:"createdAt"`
	// StorageQuota is the account's own storage quota in bytes (0: none),
	// set by the operator; nil: its plan's.
	StorageQuota *int64 `json:"storageQuota,omitempty"`
}

// Limits are what the account may do: its plan's, with its own storage
// quota when the operator set one.
func (a Account) Limits(plans domain.Plans) domain.Limits {
	l := plans.Limits(a.Plan)
	if a.StorageQuota != nil {
		l.StorageBytes = *a.StorageQuota
	}
	return l
}

// Key is a live API key, found by the SHA-256 of the key. Revoked keys are
// removed.
type Key struct {
	ID        string    `json:"id"`
	Account   string    `json:"account"`
	Hash      string    `json:"hash"`
	Prefix    string    `json:"prefix"` // the key's first characters, for people to recognise it
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
}

// User is a person who logs in to the dashboard (of Account) or to the
// admin interface (Operator). The password hash stays in the event stream:
// logins read the user's stream, never this model.
type User struct {
	ID            string    `json:"id"`
	Key           string    `json:"key"` // the user's stream id (domain.UserKey)
	Email         string    `json:"email"`
	Account       string    `json:"account,omitempty"`
	Operator      bool      `json:"operator,omitempty"`
	PasswordSet   bool      `json:"passwordSet"`
	PasswordGen   int       `json:"passwordGen"` // sessions are bound to one
	LinkHash      string    `json:"linkHash,omitempty"`
	LinkExpiresAt time.Time `json:"linkExpiresAt"`
	CreatedAt     time.Time `json:"createdAt"`
}

// Webhook is a live webhook subscription. It keeps the signing secret only
// sealed (as the event holds it; empty for a v1 subscription, whose clear
// secret is never copied here); delivery opens it from the event stream.
// API views never show it after creation.
type Webhook struct {
	ID           string    `json:"id"`
	Account      string    `json:"account"`
	URL          string    `json:"url"`
	Events       []string  `json:"events"`
	SealedSecret string    `json:"sealedSecret,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

// Delivery is one attempt of a webhook delivery, as the deliveries log
// shows it.
type Delivery struct {
	WebhookID  string    `json:"webhookId"`
	DeliveryID string    `json:"deliveryId"`
	EventID    string    `json:"eventId"`
	Kind       string    `json:"kind"`
	VideoID    string    `json:"videoId,omitempty"`
	Attempt    int       `json:"attempt"`
	Succeeded  bool      `json:"succeeded"`
	GaveUp     bool      `json:"gaveUp"`
	StatusCode int       `json:"statusCode"`
	Error      string    `json:"error"`
	DurationMs int64     `json:"durationMs"`
	At         time.Time `json:"at"`
}

// Usage is what one account holds, kept per account as events apply (so
// reading it costs one record whatever the account's size): its live
// videos by status, and the bytes of their originals and outputs.
type Usage struct {
	Pending      int   `json:"pending"`
	Processing   int   `json:"processing"`
	Completed    int   `json:"completed"`
	Failed       int   `json:"failed"`
	StorageBytes int64 `json:"storageBytes"`
}

// Videos is the number of live videos of each status.
func (u Usage) Videos() map[domain.Status]int {
	return map[domain.Status]int{domain.StatusPending: u.Pending, domain.StatusProcessing: u.Processing,
		domain.StatusCompleted: u.Completed, domain.StatusFailed: u.Failed}
}

// add counts n videos of status st holding bytes.
func (u *Usage) add(st domain.Status, n int, bytes int64) {
	switch st {
	case domain.StatusPending:
		u.Pending += n
	case domain.StatusProcessing:
		u.Processing += n
	case domain.StatusCompleted:
		u.Completed += n
	case domain.StatusFailed:
		u.Failed += n
	}
	u.StorageBytes += bytes
}

// storedBytes is what a video holds on the media store: its original and,
// once transcoded, its outputs.
func storedBytes(v *Video) int64 {
	n := v.OriginalSize
	if v.ProcessedSize != nil {
		n += *v.ProcessedSize
	}
	return n
}

// Redelivery records that a delivery that gave up was sent again as
// another delivery.
type Redelivery struct {
	WebhookID    string    `json:"webhookId"`
	RedeliveryOf string    `json:"redeliveryOf"`
	DeliveryID   string    `json:"deliveryId"`
	At           time.Time `json:"at"`
}
