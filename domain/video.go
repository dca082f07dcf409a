package domain

import (
	"fmt"
	"strings"
	"time"
)

// Video event types.
const (
	TypeUploadAccepted       = "UploadAccepted"
	TypeTranscodeStarted     = "TranscodeStarted"
	TypeTranscodeSucceeded   = "TranscodeSucceeded"
	TypeTranscodeFailed      = "TranscodeFailed"
	TypeTranscodeInterrupted = "TranscodeInterrupted"
	TypeVideoDeleted         = "Deleted"

	TypePlaybackPolicyChanged = "PlaybackPolicyChanged"
	TypeTranscodePlayable     = "TranscodePlayable"
	TypeTranscodeRetried      = "TranscodeRetried"
	TypeVideoDetailsChanged   = "VideoDetailsChanged"
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
	return "", E("parse status", Invalid, "status must be one of PENDING, PROCESSING, COMPLETED, FAILED (got %q)", Truncate(s, 40))
}

// UploadAccepted: the original is stored and the video waits for processing.
type UploadAccepted struct {
	Account        string `json:"account"`
	Collection     string `json:"collection"`
	CollectionName string `json:"collectionName"`
	Filename       string `json:"filename"`
	OriginalSize   int64  `json:"originalSize"`
	Ext            string `json:"ext"` // lower-case, with the dot; the original is stored as original<ext>
	// PlaybackPolicy is the video's policy from the start (its collection's
	// default, or the upload's own); absent in older events: public.
	PlaybackPolicy PlaybackPolicy `json:"playbackPolicy,omitempty"`
	// Download asks for the MP4 download rendition (the collection's
	// setting, or the upload's own).
	Download bool `json:"download,omitempty"`
	// The video's details as normalized (Details.Normalize); absent in
	// older events, whose title is DefaultTitle(Filename).
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	// ThumbnailTime is the moment (seconds) the thumbnail is taken at; nil:
	// kino's choice (a tenth of the way in).
	ThumbnailTime *float64 `json:"thumbnailTime,omitempty"`
}

// Details are the upload's details; an older event's title is the
// filename's default.
func (e UploadAccepted) Details() Details {
	d := Details{Title: e.Title, Description: e.Description, Tags: e.Tags, Metadata: e.Metadata}
	if d.Title == "" {
		d.Title = DefaultTitle(e.Filename)
	}
	return d
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
	Storyboard    bool     `json:"storyboard,omitempty"` // storyboard.jpg and storyboard.vtt are published
	Download      bool     `json:"download,omitempty"`   // download.mp4 is published
	Animated      bool     `json:"animated,omitempty"`   // preview.webp is published
	// ThumbnailTime is the moment thumbnail.jpg shows, when one was asked
	// for (nil: kino's choice).
	ThumbnailTime *float64 `json:"thumbnailTime,omitempty"`
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

// Reasons of a TranscodeInterrupted.
const (
	// InterruptShutdown: the worker stopped (SIGTERM) and handed the job
	// back.
	InterruptShutdown = "shutdown"
	// InterruptCrash: the worker died holding the job; the next worker to
	// get it records this.
	InterruptCrash = "crash"
	// InterruptOutage: NATS (the event store, or the media bucket) could
	// not be reached while the attempt fetched its original or published
	// its outputs; the job is retried after the backoff.
	InterruptOutage = "outage"
)

// TranscodeInterrupted: attempt Attempt ended without a result of its own,
// because its worker stopped (Reason InterruptShutdown), died
// (InterruptCrash) or could not reach NATS (InterruptOutage). It does not use up an attempt: only TranscodeFailed
// does. Crashes are counted all the same, so that a file that kills its
// worker every time still ends FAILED (StartTranscode.MaxCrashes).
type TranscodeInterrupted struct {
	Account string `json:"account"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
}

// VideoDeleted: the video and its files are gone; its events stay.
type VideoDeleted struct {
	Account string `json:"account"`
}

// TranscodePlayable: attempt Attempt published the first segments of every
// rendition (and of the audio); the video plays while it is still
// PROCESSING, from an EVENT playlist that becomes VOD when it completes.
// Recorded once per attempt, always before TranscodeSucceeded (a
// CompleteTranscode on a video not yet playable records it first).
type TranscodePlayable struct {
	Account     string   `json:"account"`
	Attempt     int      `json:"attempt"`
	Resolutions []string `json:"resolutions"` // "<height>p", highest first
}

// TranscodeRetried: a FAILED video was queued again (POST
// /v1/videos/{id}/retry). Its failures and crashes start again from zero;
// Attempts keeps counting.
type TranscodeRetried struct {
	Account string `json:"account"`
}

// PlaybackPolicyChanged: the video's media now follow Policy.
type PlaybackPolicyChanged struct {
	Account string         `json:"account"`
	Policy  PlaybackPolicy `json:"playbackPolicy"`
	// DetailsFollow: the same change (one PATCH) changed the details too;
	// a VideoDetailsChanged follows in the same append. Absent in older
	// events.
	DetailsFollow bool `json:"detailsFollow,omitempty"`
}

func (UploadAccepted) EventType() string { return TypeUploadAccepted }
func (UploadAccepted) Aggregate() string { return AggVideo }
func (VideoDeleted) EventType() string   { return TypeVideoDeleted }
func (VideoDeleted) Aggregate() string   { return AggVideo }

func (TranscodeStarted) EventType() string     { return TypeTranscodeStarted }
func (TranscodeStarted) Aggregate() string     { return AggVideo }
func (TranscodeSucceeded) EventType() string   { return TypeTranscodeSucceeded }
func (TranscodeSucceeded) Aggregate() string   { return AggVideo }
func (TranscodeFailed) EventType() string      { return TypeTranscodeFailed }
func (TranscodeFailed) Aggregate() string      { return AggVideo }
func (TranscodeInterrupted) EventType() string { return TypeTranscodeInterrupted }
func (TranscodeInterrupted) Aggregate() string { return AggVideo }

func (TranscodePlayable) EventType() string { return TypeTranscodePlayable }
func (TranscodePlayable) Aggregate() string { return AggVideo }
func (TranscodeRetried) EventType() string  { return TypeTranscodeRetried }
func (TranscodeRetried) Aggregate() string  { return AggVideo }

// VideoDetailsChanged: the video's details are now these, whole (title,
// description, tags, metadata as normalized).
type VideoDetailsChanged struct {
	Account     string            `json:"account"`
	Title       string            `json:"title"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// Details are the event's details.
func (e VideoDetailsChanged) Details() Details {
	return Details{Title: e.Title, Description: e.Description, Tags: e.Tags, Metadata: e.Metadata}
}

func (VideoDetailsChanged) EventType() string   { return TypeVideoDetailsChanged }
func (VideoDetailsChanged) Aggregate() string   { return AggVideo }
func (PlaybackPolicyChanged) EventType() string { return TypePlaybackPolicyChanged }
func (PlaybackPolicyChanged) Aggregate() string { return AggVideo }

// Video is the write-side state of one video.
type Video struct {
	ID         string
	Account    string
	Collection string
	Ext        string
	Status     Status
	Attempts   int  // transcode attempts started, interrupted ones included
	Failures   int  // attempts that failed (TranscodeFailed): the attempt budget
	Crashes    int  // attempts whose worker died holding the job
	Running    bool // an attempt started and has no end yet (success, failure or interruption)
	Created    bool
	Deleted    bool
	Policy     PlaybackPolicy // never empty once created
	Download   bool           // the upload asked for the MP4 download rendition
	Playable   bool           // the running (or last) attempt recorded TranscodePlayable
	Filename   string         // the upload's display filename
	Details    Details        // normalized; the title never empty once created
	Captions   []CaptionTrack // its text tracks, in the order added
	// ThumbnailTime is the moment asked for the thumbnail (nil: kino's
	// choice); ThumbnailAt the one thumbnail.jpg shows (nil: kino's choice,
	// or none yet). Animated: preview.webp is published.
	ThumbnailTime, ThumbnailAt *float64
	Animated                   bool
}

func (v Video) Evolve(e Event) Video {
	switch d := e.Data.(type) {
	case UploadAccepted:
		v.ID, v.Account, v.Collection, v.Ext = e.AggregateID, d.Account, d.Collection, d.Ext
		v.Status, v.Created = StatusPending, true
		v.Policy, v.Download = d.PlaybackPolicy.OrPublic(), d.Download
		v.Filename, v.Details = d.Filename, d.Details()
		v.ThumbnailTime = d.ThumbnailTime
	case ThumbnailRequested:
		at := d.At
		v.ThumbnailTime = &at
	case ThumbnailChanged:
		at := d.At
		v.ThumbnailAt, v.Animated = &at, v.Animated || d.Animated
	case VideoDetailsChanged:
		v.Details = d.Details()
	case TranscodeStarted:
		v.Status, v.Attempts, v.Running, v.Playable = StatusProcessing, d.Attempt, true, false
	case TranscodePlayable:
		v.Playable = true
	case TranscodeRetried:
		v.Status, v.Failures, v.Crashes, v.Running, v.Playable = StatusPending, 0, 0, false, false
	case PlaybackPolicyChanged:
		v.Policy = d.Policy
	case TranscodeSucceeded:
		v.Status, v.Running = StatusCompleted, false
		v.ThumbnailAt, v.Animated = d.ThumbnailTime, d.Animated
	case TranscodeFailed:
		v.Failures, v.Running, v.Playable = v.Failures+1, false, false
		if d.Final {
			v.Status = StatusFailed
		}
	case TranscodeInterrupted:
		v.Running, v.Playable = false, false
		if d.Reason == InterruptCrash {
			v.Crashes++
		}
	case VideoDeleted:
		v.Deleted = true
	case CaptionTrackAdded, CaptionTrackRequested, CaptionTrackReady, CaptionTrackFailed, CaptionTrackRemoved:
		return v.evolveCaptions(e)
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
	MaxSize        int64          // the account plan's limit
	PlaybackPolicy PlaybackPolicy // "" is public
	Download       bool
	Details        Details  // normalized by Decide; no title: the filename's default
	ThumbnailTime  *float64 // seconds; nil: kino's choice
}

// UpdateVideo changes a video's playback policy (when Policy is set) and
// details (Details), in one step: either both changes happen or neither.
type UpdateVideo struct {
	Account string
	Policy  *PlaybackPolicy
	Details DetailsPatch
	// ThumbnailTime asks for the thumbnail at that moment (seconds); it
	// must be before the end of a COMPLETED video.
	ThumbnailTime *float64
}

// DeleteVideo removes a video for its account.
type DeleteVideo struct {
	Account string
}

// StartTranscode begins the next attempt. An attempt still running in the
// events is one whose worker died holding the job (the job came back only
// because its holder went silent): it is recorded as a crash first. It gives
// up instead when MaxAttempts attempts have failed, or when MaxCrashes
// attempts have crashed (a file that kills its worker every time must not
// keep a video PROCESSING forever). Interruptions by a shutdown never count.
type StartTranscode struct {
	Worker      string
	MaxAttempts int // failed attempts allowed (0: no limit)
	MaxCrashes  int // crashed attempts allowed (0: no limit)
}

// InterruptTranscode records that the running attempt ended without a
// result: Reason is InterruptShutdown or InterruptCrash. Without a running
// attempt it records nothing.
type InterruptTranscode struct {
	Reason string
}

// CompleteTranscode records finished outputs.
type CompleteTranscode struct {
	Duration      float64
	Width, Height int
	HasAudio      bool
	Resolutions   []string
	ProcessedSize int64
	Storyboard    bool // storyboard.jpg and storyboard.vtt were published
	Download      bool // download.mp4 was published
	Animated      bool // preview.webp was published
	// ThumbnailTime is the moment thumbnail.jpg was taken at, as asked
	// (nil: kino's choice).
	ThumbnailTime *float64
}

// FailTranscode records a failed attempt; Final makes the video FAILED.
type FailTranscode struct {
	Reason string
	Final  bool
}

// MarkPlayable records that the running attempt's first segments are
// published (TranscodePlayable). Once per attempt: again is a no-op.
type MarkPlayable struct {
	Resolutions []string
}

// RetryTranscode queues a FAILED video again for its account.
type RetryTranscode struct {
	Account string
}

// SetPlaybackPolicy changes a video's policy for its account.
type SetPlaybackPolicy struct {
	Account string
	Policy  PlaybackPolicy
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
		if c.PlaybackPolicy != "" {
			if _, err := ParsePlaybackPolicy(string(c.PlaybackPolicy)); err != nil {
				return nil, err
			}
		}
		d, err := c.Details.Normalize(op, c.Filename)
		if err != nil {
			return nil, err
		}
		if c.ThumbnailTime != nil {
			if err := CheckThumbnailTime(op, *c.ThumbnailTime); err != nil {
				return nil, err
			}
		}
		return []Payload{UploadAccepted{ThumbnailTime: c.ThumbnailTime,
			Account: c.Account, Collection: c.Collection, CollectionName: c.CollectionName,
			Filename: c.Filename, OriginalSize: c.Size, Ext: ext,
			PlaybackPolicy: c.PlaybackPolicy, Download: c.Download,
			Title: d.Title, Description: d.Description, Tags: d.Tags, Metadata: d.Metadata,
		}}, nil
	case StartTranscode:
		const op = "start transcode"
		if !v.Created || v.Deleted {
			return nil, E(op, NotFound, "video not found")
		}
		if v.Terminal() {
			return nil, E(op, Conflict, "video is already %s", v.Status)
		}
		var out []Payload
		crashes := v.Crashes
		if v.Running {
			out = append(out, TranscodeInterrupted{Account: v.Account, Attempt: v.Attempts, Reason: InterruptCrash})
			crashes++
		}
		switch {
		case c.MaxAttempts > 0 && v.Failures >= c.MaxAttempts:
			return append(out, TranscodeFailed{Account: v.Account, Attempt: v.Attempts, Final: true,
				Reason: fmt.Sprintf("Processing failed %d times; giving up.", v.Failures)}), nil
		case c.MaxCrashes > 0 && crashes >= c.MaxCrashes:
			return append(out, TranscodeFailed{Account: v.Account, Attempt: v.Attempts, Final: true,
				Reason: fmt.Sprintf("Processing was interrupted %d times; giving up.", crashes)}), nil
		}
		return append(out, TranscodeStarted{Account: v.Account, Attempt: v.Attempts + 1, Worker: c.Worker}), nil
	case InterruptTranscode:
		const op = "interrupt transcode"
		if !v.Created || v.Deleted {
			return nil, E(op, NotFound, "video not found")
		}
		if c.Reason != InterruptShutdown && c.Reason != InterruptCrash && c.Reason != InterruptOutage {
			return nil, E(op, Invalid, "reason must be %s, %s or %s", InterruptShutdown, InterruptCrash, InterruptOutage)
		}
		if v.Terminal() || !v.Running {
			return nil, nil
		}
		return []Payload{TranscodeInterrupted{Account: v.Account, Attempt: v.Attempts, Reason: c.Reason}}, nil
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
		var out []Payload
		if !v.Playable { // video.playable always comes before video.completed
			out = append(out, TranscodePlayable{Account: v.Account, Attempt: v.Attempts, Resolutions: c.Resolutions})
		}
		out = append(out, TranscodeSucceeded{Account: v.Account, Attempt: v.Attempts, Duration: c.Duration,
			Width: c.Width, Height: c.Height, HasAudio: c.HasAudio, Resolutions: c.Resolutions, ProcessedSize: c.ProcessedSize,
			Storyboard: c.Storyboard, Download: c.Download, Animated: c.Animated, ThumbnailTime: c.ThumbnailTime})
		if v.ThumbnailTime != nil && (c.ThumbnailTime == nil || *c.ThumbnailTime != *v.ThumbnailTime) {
			// Asked for while the attempt made its stills: the job remakes it.
			out = append(out, ThumbnailRequested{Account: v.Account, At: *v.ThumbnailTime})
		}
		return out, nil
	case MarkPlayable:
		const op = "mark playable"
		if !v.Created || v.Deleted {
			return nil, E(op, NotFound, "video not found")
		}
		if v.Status != StatusProcessing || !v.Running {
			return nil, E(op, Conflict, "video is %s with no attempt running", v.Status)
		}
		if len(c.Resolutions) == 0 {
			return nil, E(op, Invalid, "resolutions are required")
		}
		if v.Playable {
			return nil, nil
		}
		return []Payload{TranscodePlayable{Account: v.Account, Attempt: v.Attempts, Resolutions: c.Resolutions}}, nil
	case RetryTranscode:
		const op = "retry video"
		if !v.Exists(c.Account) {
			return nil, E(op, NotFound, "video not found")
		}
		if v.Status != StatusFailed {
			return nil, E(op, Conflict, "only a FAILED video can be retried; this one is %s", v.Status)
		}
		return []Payload{TranscodeRetried{Account: v.Account}}, nil
	case SetPlaybackPolicy:
		const op = "set playback policy"
		if !v.Exists(c.Account) {
			return nil, E(op, NotFound, "video not found")
		}
		if _, err := ParsePlaybackPolicy(string(c.Policy)); err != nil {
			return nil, err
		}
		if c.Policy == v.Policy {
			return nil, nil
		}
		return []Payload{PlaybackPolicyChanged{Account: v.Account, Policy: c.Policy}}, nil
	case UpdateVideo:
		const op = "update video"
		if !v.Exists(c.Account) {
			return nil, E(op, NotFound, "video not found")
		}
		var policy *PlaybackPolicyChanged
		if c.Policy != nil {
			if _, err := ParsePlaybackPolicy(string(*c.Policy)); err != nil {
				return nil, err
			}
			if *c.Policy != v.Policy {
				policy = &PlaybackPolicyChanged{Account: v.Account, Policy: *c.Policy}
			}
		}
		var details *VideoDetailsChanged
		if !c.Details.Empty() {
			d, err := c.Details.Apply(v.Details).Normalize(op, v.Filename)
			if err != nil {
				return nil, err
			}
			if !d.Equal(v.Details) {
				details = &VideoDetailsChanged{Account: v.Account, Title: d.Title, Description: d.Description, Tags: d.Tags, Metadata: d.Metadata}
			}
		}
		var thumb *ThumbnailRequested
		if c.ThumbnailTime != nil {
			at := *c.ThumbnailTime
			if err := CheckThumbnailTime(op, at); err != nil {
				return nil, err
			}
			if v.Status == StatusFailed {
				return nil, E(op, Conflict, "a FAILED video has no thumbnail to change")
			}
			if v.ThumbnailTime == nil || *v.ThumbnailTime != at {
				thumb = &ThumbnailRequested{Account: v.Account, At: at}
			}
		}
		var out []Payload
		if policy != nil {
			policy.DetailsFollow = details != nil
			out = append(out, *policy)
		}
		if details != nil {
			out = append(out, *details)
		}
		if thumb != nil {
			out = append(out, *thumb)
		}
		return out, nil
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
	case AddCaptionTrack, FinishCaptionTrack, FailCaptionTrack, RemoveCaptionTrack:
		return v.decideCaption(cmd)
	case ChangeThumbnail:
		// A job's result: nothing when the video is gone, not COMPLETED, or
		// asked since for another moment (that request has its own job).
		if !v.Created || v.Deleted || v.Status != StatusCompleted || v.ThumbnailTime == nil || *v.ThumbnailTime != c.At {
			return nil, nil
		}
		return []Payload{ThumbnailChanged{Account: v.Account, At: c.At, Animated: c.Animated && !v.Animated}}, nil
	}
	return nil, E("decide video", Internal, "unknown command %T", cmd)
}
