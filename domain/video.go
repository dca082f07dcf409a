package domain

import "time"

// Video event types.
const (
	TypeUploadAccepted = "UploadAccepted"
	TypeVideoDeleted   = "Deleted"
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

// VideoDeleted: the video and its files are gone; its events stay.
type VideoDeleted struct {
	Account string `json:"account"`
}

func (UploadAccepted) EventType() string { return TypeUploadAccepted }
func (UploadAccepted) Aggregate() string { return AggVideo }
func (VideoDeleted) EventType() string   { return TypeVideoDeleted }
func (VideoDeleted) Aggregate() string   { return AggVideo }

// Video is the write-side state of one video.
type Video struct {
	ID         string
	Account    string
	Collection string
	Status     Status
	Created    bool
	Deleted    bool
}

func (v Video) Evolve(e Event) Video {
	switch d := e.Data.(type) {
	case UploadAccepted:
		v.ID, v.Account, v.Collection = e.AggregateID, d.Account, d.Collection
		v.Status, v.Created = StatusPending, true
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
	case DeleteVideo:
		if !v.Exists(c.Account) {
			return nil, E("delete video", NotFound, "video not found")
		}
		return []Payload{VideoDeleted{Account: c.Account}}, nil
	}
	return nil, E("decide video", Internal, "unknown command %T", cmd)
}
