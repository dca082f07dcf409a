package domain

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Caption (text track) event types, on the video's stream.
const (
	TypeCaptionTrackAdded     = "CaptionTrackAdded"
	TypeCaptionTrackRequested = "CaptionTrackRequested"
	TypeCaptionTrackReady     = "CaptionTrackReady"
	TypeCaptionTrackFailed    = "CaptionTrackFailed"
	TypeCaptionTrackRemoved   = "CaptionTrackRemoved"
)

// CaptionStatus is a text track's state: an uploaded track is READY at
// once; a generated one is PENDING until its job ends READY or FAILED.
type CaptionStatus string

const (
	CaptionPending CaptionStatus = "PENDING"
	CaptionReady   CaptionStatus = "READY"
	CaptionFailed  CaptionStatus = "FAILED"
)

// Where a track's cues come from.
const (
	CaptionUploaded  = "uploaded"
	CaptionGenerated = "generated"
)

// Bounds of a video's text tracks. A track's WebVTT lives in its event
// (so a replay rebuilds it on every node and it is in the video's
// history); MaxCaptionSize bounds it as stored, JSON-escaped, far under
// the smallest message size a NATS server allows (1 MiB) and far over a
// feature film's subtitles (about 100 KB).
const (
	MaxCaptionTracks   = 20
	MaxCaptionLabelLen = 80
	MaxCaptionSize     = 512 << 10
)

// CaptionTrackAdded: an uploaded text track is added to the video, READY,
// with its cues (VTT, normalized WebVTT). Default makes it the track
// players select first, and no other track is the default any more.
type CaptionTrackAdded struct {
	Account  string `json:"account"`
	Track    string `json:"track"`
	Language string `json:"language"`
	Label    string `json:"label"`
	Default  bool   `json:"default,omitempty"`
	VTT      string `json:"vtt"`
	Cues     int    `json:"cues"`
}

// CaptionTrackRequested: a text track is to be generated from the video's
// speech; it is PENDING until CaptionTrackReady or CaptionTrackFailed.
// It is also the generation's job (the transcoder's queue takes it).
type CaptionTrackRequested struct {
	Account  string `json:"account"`
	Track    string `json:"track"`
	Language string `json:"language"`
	Label    string `json:"label"`
	Default  bool   `json:"default,omitempty"`
}

// CaptionTrackReady: a generated track's cues are made.
type CaptionTrackReady struct {
	Account string `json:"account"`
	Track   string `json:"track"`
	VTT     string `json:"vtt"`
	Cues    int    `json:"cues"`
}

// CaptionTrackFailed: a generated track could not be made (Reason says
// why, for people).
type CaptionTrackFailed struct {
	Account string `json:"account"`
	Track   string `json:"track"`
	Reason  string `json:"reason"`
}

// CaptionTrackRemoved: the track is gone.
type CaptionTrackRemoved struct {
	Account string `json:"account"`
	Track   string `json:"track"`
}

func (CaptionTrackAdded) EventType() string     { return TypeCaptionTrackAdded }
func (CaptionTrackAdded) Aggregate() string     { return AggVideo }
func (CaptionTrackRequested) EventType() string { return TypeCaptionTrackRequested }
func (CaptionTrackRequested) Aggregate() string { return AggVideo }
func (CaptionTrackReady) EventType() string     { return TypeCaptionTrackReady }
func (CaptionTrackReady) Aggregate() string     { return AggVideo }
func (CaptionTrackFailed) EventType() string    { return TypeCaptionTrackFailed }
func (CaptionTrackFailed) Aggregate() string    { return AggVideo }
func (CaptionTrackRemoved) EventType() string   { return TypeCaptionTrackRemoved }
func (CaptionTrackRemoved) Aggregate() string   { return AggVideo }

// CaptionTrack is the write side's view of one track.
type CaptionTrack struct {
	ID       string
	Language string
	Label    string
	Default  bool
	Source   string
	Status   CaptionStatus
}

// AddCaptionTrack adds a track to a video of Account: VTT (normalized
// WebVTT holding Cues cues) for an uploaded track, or, with Generate, a
// PENDING track its job fills. Track is its new id; Language a BCP 47 tag
// in its canonical form; Label what players show (unique on the video,
// compared case-insensitively).
type AddCaptionTrack struct {
	Account  string
	Track    string
	Language string
	Label    string
	Default  bool
	Generate bool
	VTT      string
	Cues     int
}

// FinishCaptionTrack records a generated track's cues. A track that is no
// longer PENDING (removed, already finished) records nothing: a job
// redelivered after its result was stored must not fail.
type FinishCaptionTrack struct {
	Track string
	VTT   string
	Cues  int
}

// FailCaptionTrack records that a generated track could not be made; like
// FinishCaptionTrack, only for a PENDING track.
type FailCaptionTrack struct {
	Track  string
	Reason string
}

// RemoveCaptionTrack removes a track of a video of Account.
type RemoveCaptionTrack struct {
	Account string
	Track   string
}

// languageTag is the syntax of a BCP 47 tag as kino keeps it: a 2-3
// letter language and subtags (the edge checks the registry and
// canonicalizes; this is the last guard).
var languageTag = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*$`)

// ValidLanguageTag reports whether s has the form of a canonical BCP 47
// language tag ("en", "pt-BR", "zh-Hant").
func ValidLanguageTag(s string) bool { return len(s) <= 35 && languageTag.MatchString(s) }

// Caption finds track id among v's tracks.
func (v Video) Caption(id string) (CaptionTrack, bool) {
	for _, t := range v.Captions {
		if t.ID == id {
			return t, true
		}
	}
	return CaptionTrack{}, false
}

// StoredCaptionSize is the size of vtt as an event stores it: JSON
// escapes <, >, & (and control characters) into six bytes each, a quote
// or backslash into two.
func StoredCaptionSize(vtt string) int {
	n := len(vtt)
	for i := 0; i < len(vtt); i++ {
		switch c := vtt[i]; {
		case c == '<' || c == '>' || c == '&' || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'):
			n += 5
		case c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r':
			n++
		}
	}
	return n
}

func checkCaptionCues(op, vtt string, cues int) error {
	if !strings.HasPrefix(vtt, "WEBVTT") || !utf8.ValidString(vtt) || cues <= 0 {
		return E(op, Invalid, "the track holds no cues")
	}
	if n := StoredCaptionSize(vtt); n > MaxCaptionSize {
		return E(op, TooLarge, "the track is %d KiB once stored; a track may hold at most %d KiB", n>>10, MaxCaptionSize>>10)
	}
	return nil
}

func (v Video) decideCaption(cmd any) ([]Payload, error) {
	switch c := cmd.(type) {
	case AddCaptionTrack:
		const op = "add captions"
		if !v.Exists(c.Account) {
			return nil, E(op, NotFound, "video not found")
		}
		if !ValidID(c.Track) {
			return nil, E(op, Invalid, "invalid track id")
		}
		if _, ok := v.Caption(c.Track); ok {
			return nil, E(op, Conflict, "the track already exists")
		}
		if !ValidLanguageTag(c.Language) {
			return nil, E(op, Invalid, "language must be a BCP 47 tag such as en or pt-BR (got %q)", truncateRunes(c.Language, 40))
		}
		label := strings.TrimSpace(c.Label)
		if err := checkName(op, "label", label); err != nil {
			return nil, err
		}
		if n := utf8.RuneCountInString(label); n > MaxCaptionLabelLen {
			return nil, E(op, Invalid, "label must be at most %d characters (got %d)", MaxCaptionLabelLen, n)
		}
		if len(v.Captions) >= MaxCaptionTracks {
			return nil, E(op, Conflict, "a video may have at most %d text tracks; delete one first", MaxCaptionTracks)
		}
		for _, t := range v.Captions {
			if strings.EqualFold(t.Label, label) {
				return nil, E(op, Conflict, "the video already has a track labelled %q; labels tell tracks apart in a player's menu", t.Label)
			}
			if c.Generate && t.Source == CaptionGenerated && t.Status == CaptionPending && t.Language == c.Language {
				return nil, E(op, Conflict, "captions in %s are already being generated for this video", c.Language)
			}
		}
		if c.Generate {
			return []Payload{CaptionTrackRequested{Account: v.Account, Track: c.Track, Language: c.Language, Label: label, Default: c.Default}}, nil
		}
		if err := checkCaptionCues(op, c.VTT, c.Cues); err != nil {
			return nil, err
		}
		return []Payload{CaptionTrackAdded{Account: v.Account, Track: c.Track, Language: c.Language, Label: label, Default: c.Default,
			VTT: c.VTT, Cues: c.Cues}}, nil
	case FinishCaptionTrack:
		const op = "finish captions"
		if !v.Created || v.Deleted {
			return nil, nil
		}
		if t, ok := v.Caption(c.Track); !ok || t.Status != CaptionPending {
			return nil, nil
		}
		if err := checkCaptionCues(op, c.VTT, c.Cues); err != nil {
			return nil, err
		}
		return []Payload{CaptionTrackReady{Account: v.Account, Track: c.Track, VTT: c.VTT, Cues: c.Cues}}, nil
	case FailCaptionTrack:
		if !v.Created || v.Deleted {
			return nil, nil
		}
		if t, ok := v.Caption(c.Track); !ok || t.Status != CaptionPending {
			return nil, nil
		}
		reason := strings.TrimSpace(c.Reason)
		if reason == "" {
			return nil, E("fail captions", Invalid, "a reason is required")
		}
		return []Payload{CaptionTrackFailed{Account: v.Account, Track: c.Track, Reason: truncateRunes(reason, 500)}}, nil
	case RemoveCaptionTrack:
		const op = "delete captions"
		if !v.Exists(c.Account) {
			return nil, E(op, NotFound, "video not found")
		}
		if _, ok := v.Caption(c.Track); !ok {
			return nil, E(op, NotFound, "track not found")
		}
		return []Payload{CaptionTrackRemoved{Account: v.Account, Track: c.Track}}, nil
	}
	return nil, E("decide video", Internal, "unknown command %T", cmd)
}

// evolveCaptions folds a caption event into v's tracks (a fresh slice:
// states are values).
func (v Video) evolveCaptions(e Event) Video {
	tracks := make([]CaptionTrack, 0, len(v.Captions)+1)
	switch d := e.Data.(type) {
	case CaptionTrackAdded:
		tracks = withDefault(tracks, v.Captions, d.Default)
		tracks = append(tracks, CaptionTrack{ID: d.Track, Language: d.Language, Label: d.Label, Default: d.Default,
			Source: CaptionUploaded, Status: CaptionReady})
	case CaptionTrackRequested:
		tracks = withDefault(tracks, v.Captions, d.Default)
		tracks = append(tracks, CaptionTrack{ID: d.Track, Language: d.Language, Label: d.Label, Default: d.Default,
			Source: CaptionGenerated, Status: CaptionPending})
	case CaptionTrackReady, CaptionTrackFailed:
		id, status := "", CaptionReady
		if r, ok := d.(CaptionTrackReady); ok {
			id = r.Track
		} else {
			id, status = d.(CaptionTrackFailed).Track, CaptionFailed
		}
		for _, t := range v.Captions {
			if t.ID == id {
				t.Status = status
			}
			tracks = append(tracks, t)
		}
	case CaptionTrackRemoved:
		for _, t := range v.Captions {
			if t.ID != d.Track {
				tracks = append(tracks, t)
			}
		}
	}
	v.Captions = tracks
	return v
}

// withDefault appends tracks to dst, none of them default any more when a
// new default comes.
func withDefault(dst, tracks []CaptionTrack, newDefault bool) []CaptionTrack {
	for _, t := range tracks {
		t.Default = t.Default && !newDefault
		dst = append(dst, t)
	}
	return dst
}
