package domain

import (
	"fmt"
	"strings"
	"time"
)

// Video event types.
const (
	TypeUploadAccepted     = "UploadAccepted"
	TypeTranscodeStarted   = "TranscodeStarted"
	TypeTranscodeSucceeded = "TranscodeSucceeded"
	TypeTranscodeFailed    = "TranscodeFailed"
	TypeVideoDeleted       = "Deleted"
)

// Status is a video's processing status (spec §3).
type Status string

const (
	StatusPending    Status = "PENDING"
	StatusProcessing Status = "PROCESSING"
	StatusCompleted  Status = "COMPLETED"
	StatusFailed     Status = "FAILED"
)

// ParseStatus checks a status name.
func ParseStatus(s string) (Status, error) {
	switch st := Status(s); st {
	case StatusPending, StatusProcessing, StatusCompleted, StatusFailed:
		return st, nil
	}
	return "", E("parse status", Invalid, "status must be one of PENDING, PROCESSING, COMPLETED, FAILED (got %q)", truncate(s, 40))
}

// UploadAccepted: the original is stored and the video waits for processing.
type UploadAccepted struct {
	Account        string `json:"account"`
	Collection     string `json:"collection"`
	CollectionName string `json:"collectionName"`
	Filename       string `json:"filename"`
	OriginalSize   int64  `json:"originalSize"`
	Ext            string `json:"ext"` // lower-case, with the dot; the original is stored as original<ext>
}

// TranscodeStarted: a worker began attempt Attempt (1, 2, ...).
type TranscodeStarted struct {
	Account string `json:"account"`
	Attempt int    `json:"attempt"`
	Worker  string `json:"worker"`
}

// TranscodeSucceeded: the HLS ladder, thumbnail and preview are in place.
type TranscodeSucceeded struct {
	Account       string   `json:"account"`
	Attempt       int      `json:"attempt"`
	Duration      float64  `json:"duration"`
	Width         int      `json:"width"`  // displayed size of the source
	Height        int      `json:"height"` //
	HasAudio      bool     `json:"hasAudio"`
	Resolutions   []string `json:"resolutions"` // "<height>p", highest first
	ProcessedSize int64    `json:"processedSize"`
}

// TranscodeFailed: an attempt failed. Reason is a sentence for the user.
// When Final is false another attempt follows; when true the video is
// FAILED.
type TranscodeFailed struct {
	Account string `json:"account"`
	Attempt int    `json:"attempt"`
	Final   bool   `json:"final"`
	Reason  string `json:"reason"`
}

// VideoDeleted: the video and its files are gone; its events stay.
type VideoDeleted struct {
	Account string `json:"account"`
}

func (UploadAccepted) EventType() string { return TypeUploadAccepted }
func (UploadAccepted) Aggregate() string { return AggVideo }
func (VideoDeleted) EventType() string   { return TypeVideoDeleted }
func (VideoDeleted) Aggregate() string   { return AggVideo }

func (TranscodeStarted) EventType() string   { return TypeTranscodeStarted }
func (TranscodeStarted) Aggregate() string   { return AggVideo }
func (TranscodeSucceeded) EventType() string { return TypeTranscodeSucceeded }
func (TranscodeSucceeded) Aggregate() string { return AggVideo }
func (TranscodeFailed) EventType() string    { return TypeTranscodeFailed }
func (TranscodeFailed) Aggregate() string    { return AggVideo }

// Video is the write-side state of one video.
type Video struct {
	ID         string
	Account    string
	Collection string
	Ext        string
	Status     Status
	Attempts   int // transcode attempts started
	Created    bool
	Deleted    bool
}

func (v Video) Evolve(e Event) Video {
	switch d := e.Data.(type) {
	case UploadAccepted:
		v.ID, v.Account, v.Collection, v.Ext = e.AggregateID, d.Account, d.Collection, d.Ext
		v.Status, v.Created = StatusPending, true
	case TranscodeStarted:
		v.Status, v.Attempts = StatusProcessing, d.Attempt
	case TranscodeSucceeded:
		v.Status = StatusCompleted
	case TranscodeFailed:
		if d.Final {
			v.Status = StatusFailed
		}
	case VideoDeleted:
		v.Deleted = true
	}
	return v
}

// Exists reports whether the video is visible to account.
func (v Video) Exists(account string) bool {
	return v.Created && !v.Deleted && v.Account == account
}

// AcceptUpload records a stored upload. The caller has checked that the
// collection exists and has stored the file.
type AcceptUpload struct {
	Account        string
	Collection     string
	CollectionName string
	Filename       string
	Size           int64
	MaxSize        int64 // the account plan's limit
}

// DeleteVideo removes a video for its account.
type DeleteVideo struct {
	Account string
}

// StartTranscode begins the next attempt, or gives up when MaxAttempts
// attempts have already started (a worker that keeps crashing on a file
// must not keep a video PROCESSING forever).
type StartTranscode struct {
	Worker      string
	MaxAttempts int
}

// CompleteTranscode records finished outputs.
type CompleteTranscode struct {
	Duration      float64
	Width, Height int
	HasAudio      bool
	Resolutions   []string
	ProcessedSize int64
}

// FailTranscode records a failed attempt; Final makes the video FAILED.
type FailTranscode struct {
	Reason string
	Final  bool
}

// Terminal reports whether processing is over (COMPLETED or FAILED).
func (v Video) Terminal() bool { return v.Status == StatusCompleted || v.Status == StatusFailed }

// Decide turns a command on v into events.
func (v Video) Decide(cmd any, _ time.Time) ([]Payload, error) {
	switch c := cmd.(type) {
	case AcceptUpload:
		const op = "upload video"
		if v.Created {
			return nil, E(op, Conflict, "video already exists")
		}
		if err := checkName(op, "filename", c.Filename); err != nil {
			return nil, err
		}
		ext, err := Extension(c.Filename)
		if err != nil {
			return nil, err
		}
		if c.Size <= 0 {
			return nil, E(op, Invalid, "file is empty")
		}
		if c.MaxSize > 0 && c.Size > c.MaxSize {
			return nil, E(op, TooLarge, "file is %d bytes; your plan allows at most %d", c.Size, c.MaxSize)
		}
		return []Payload{UploadAccepted{
			Account: c.Account, Collection: c.Collection, CollectionName: c.CollectionName,
			Filename: c.Filename, OriginalSize: c.Size, Ext: ext,
		}}, nil
	case StartTranscode:
		const op = "start transcode"
		if !v.Created || v.Deleted {
			return nil, E(op, NotFound, "video not found")
		}
		if v.Terminal() {
			return nil, E(op, Conflict, "video is already %s", v.Status)
		}
		if c.MaxAttempts > 0 && v.Attempts >= c.MaxAttempts {
			return []Payload{TranscodeFailed{Account: v.Account, Attempt: v.Attempts, Final: true,
				Reason: fmt.Sprintf("Processing failed %d times; giving up.", v.Attempts)}}, nil
		}
		return []Payload{TranscodeStarted{Account: v.Account, Attempt: v.Attempts + 1, Worker: c.Worker}}, nil
	case CompleteTranscode:
		const op = "complete transcode"
		if !v.Created || v.Deleted {
			return nil, E(op, NotFound, "video not found")
		}
		if v.Status != StatusProcessing {
			return nil, E(op, Conflict, "video is %s, not PROCESSING", v.Status)
		}
		if c.Duration <= 0 || len(c.Resolutions) == 0 || c.ProcessedSize <= 0 {
			return nil, E(op, Invalid, "duration, resolutions and processed size are required")
		}
		return []Payload{TranscodeSucceeded{Account: v.Account, Attempt: v.Attempts, Duration: c.Duration,
			Width: c.Width, Height: c.Height, HasAudio: c.HasAudio, Resolutions: c.Resolutions, ProcessedSize: c.ProcessedSize}}, nil
	case FailTranscode:
		const op = "fail transcode"
		if !v.Created || v.Deleted {
			return nil, E(op, NotFound, "video not found")
		}
		if v.Terminal() {
			return nil, E(op, Conflict, "video is already %s", v.Status)
		}
		if strings.TrimSpace(c.Reason) == "" {
			return nil, E(op, Invalid, "a reason is required")
		}
		return []Payload{TranscodeFailed{Account: v.Account, Attempt: v.Attempts, Final: c.Final, Reason: c.Reason}}, nil
	case DeleteVideo:
		if !v.Exists(c.Account) {
			return nil, E("delete video", NotFound, "video not found")
		}
		return []Payload{VideoDeleted{Account: c.Account}}, nil
	}
	return nil, E("decide video", Internal, "unknown command %T", cmd)
}
