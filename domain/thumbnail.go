package domain

import (
	"math"
	"strconv"
	"strings"
)

// Thumbnail event types, on the video's stream.
const (
	TypeThumbnailRequested = "ThumbnailRequested"
	TypeThumbnailChanged   = "ThumbnailChanged"
)

// MaxThumbnailTime bounds a thumbnailTime, in seconds (the longest plan's
// video is shorter).
const MaxThumbnailTime = 24 * 3600

// ThumbnailRequested: the video's thumbnail is to be the frame at At
// seconds. Before the video is COMPLETED its transcode makes it so; after,
// the event is also a job of the transcoder's queue, which makes the
// thumbnail (and the animated preview, if the video lacks one) from the
// original without encoding the ladder again.
type ThumbnailRequested struct {
	Account string  `json:"account"`
	At      float64 `json:"at"`
}

// ThumbnailChanged: thumbnail.jpg is now the frame at At seconds (as
// asked by the ThumbnailRequested of that time); Animated: preview.webp
// is published too.
type ThumbnailChanged struct {
	Account  string  `json:"account"`
	At       float64 `json:"at"`
	Animated bool    `json:"animated,omitempty"`
}

func (ThumbnailRequested) EventType() string { return TypeThumbnailRequested }
func (ThumbnailRequested) Aggregate() string { return AggVideo }
func (ThumbnailChanged) EventType() string   { return TypeThumbnailChanged }
func (ThumbnailChanged) Aggregate() string   { return AggVideo }

// ChangeThumbnail records a remade thumbnail of a COMPLETED video: the
// frame at At, which must still be the one asked for (a later request
// makes its own); Animated when preview.webp was published with it.
type ChangeThumbnail struct {
	At       float64
	Animated bool
}

// CheckThumbnailTime checks a thumbnailTime given by a client (seconds
// from the start; the end of the video is checked where it is known).
func CheckThumbnailTime(op string, t float64) error {
	if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 || t > MaxThumbnailTime {
		return E(op, Invalid, "thumbnailTime must be a number of seconds from 0 to %d", MaxThumbnailTime)
	}
	return nil
}

// ParseThumbnailTime reads a thumbnailTime given as text (a multipart
// field, tus metadata): seconds, such as "12" or "12.5".
func ParseThumbnailTime(op, s string) (*float64, error) {
	t, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || len(s) > 32 {
		return nil, E(op, Invalid, "thumbnailTime must be a number of seconds, such as 12.5 (got %q)", Truncate(s, 40))
	}
	if err := CheckThumbnailTime(op, t); err != nil {
		return nil, err
	}
	return &t, nil
}
