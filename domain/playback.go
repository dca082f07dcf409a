package domain

import (
	"strings"
	"time"
)

// PlaybackPolicy says who may fetch a video's media: anyone with its URLs
// (public), or only a request carrying a valid playback token (signed).
type PlaybackPolicy string

const (
	PlaybackPublic PlaybackPolicy = "public"
	PlaybackSigned PlaybackPolicy = "signed"
)

// ParsePlaybackPolicy checks a policy name; "" is not a policy.
func ParsePlaybackPolicy(s string) (PlaybackPolicy, error) {
	switch p := PlaybackPolicy(s); p {
	case PlaybackPublic, PlaybackSigned:
		return p, nil
	}
	return "", E("parse playback policy", Invalid, `playbackPolicy must be "public" or "signed" (got %q)`, truncate(s, 40))
}

// OrPublic is p, or public when p is empty (events written before policies
// existed carry none).
func (p PlaybackPolicy) OrPublic() PlaybackPolicy {
	if p == "" {
		return PlaybackPublic
	}
	return p
}

// Event types of issue 14: playback policies, progressive playback, retry,
// signing keys, collection settings.
const (
	TypePlaybackPolicyChanged     = "PlaybackPolicyChanged"
	TypeTranscodePlayable         = "TranscodePlayable"
	TypeTranscodeRetried          = "TranscodeRetried"
	TypeCollectionSettingsChanged = "CollectionSettingsChanged"
	TypeSigningKeyCreated         = "SigningKeyCreated"
	TypeSigningKeyDeleted         = "SigningKeyDeleted"
)

// PlaybackPolicyChanged: the video's media now follow Policy.
type PlaybackPolicyChanged struct {
	Account string         `json:"account"`
	Policy  PlaybackPolicy `json:"playbackPolicy"`
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

// CollectionSettingsChanged: the collection's defaults for its new videos.
// It carries every setting as it is after the change.
type CollectionSettingsChanged struct {
	Account        string         `json:"account"`
	Slug           string         `json:"slug"`
	PlaybackPolicy PlaybackPolicy `json:"playbackPolicy"`
	Downloads      bool           `json:"downloads"`
}

// SigningKeyCreated: the account's backend may sign playback tokens with
// the private key of PublicKey (Ed25519, base64url without padding, 32
// bytes). kino never keeps the private key: it was shown once.
type SigningKeyCreated struct {
	KeyID     string `json:"keyId"`
	Algorithm string `json:"algorithm"` // "EdDSA"
	PublicKey string `json:"publicKey"`
	Label     string `json:"label,omitempty"`
}

// SigningKeyDeleted: tokens signed with the key are refused from now on.
type SigningKeyDeleted struct {
	KeyID string `json:"keyId"`
}

func (PlaybackPolicyChanged) EventType() string     { return TypePlaybackPolicyChanged }
func (PlaybackPolicyChanged) Aggregate() string     { return AggVideo }
func (TranscodePlayable) EventType() string         { return TypeTranscodePlayable }
func (TranscodePlayable) Aggregate() string         { return AggVideo }
func (TranscodeRetried) EventType() string          { return TypeTranscodeRetried }
func (TranscodeRetried) Aggregate() string          { return AggVideo }
func (CollectionSettingsChanged) EventType() string { return TypeCollectionSettingsChanged }
func (CollectionSettingsChanged) Aggregate() string { return AggCollection }
func (SigningKeyCreated) EventType() string         { return TypeSigningKeyCreated }
func (SigningKeyCreated) Aggregate() string         { return AggAccount }
func (SigningKeyDeleted) EventType() string         { return TypeSigningKeyDeleted }
func (SigningKeyDeleted) Aggregate() string         { return AggAccount }

// SigningAlgorithm is the one algorithm of customer signing keys.
const SigningAlgorithm = "EdDSA"

// MaxLiveSigningKeys bounds an account's signing keys (as MaxLiveKeys does
// its API keys).
const MaxLiveSigningKeys = 20

// SigningKey is one signing key of an account, as the write side knows it.
type SigningKey struct {
	ID, PublicKey, Label string
	CreatedAt            time.Time
	Deleted              bool
}

// CreateSigningKey records a new signing key; the caller generated the key
// pair and passes the public half.
type CreateSigningKey struct {
	KeyID, PublicKey, Label string
}

// DeleteSigningKey removes a signing key.
type DeleteSigningKey struct{ KeyID string }

// SetPlaybackPolicy changes a video's policy for its account.
type SetPlaybackPolicy struct {
	Account string
	Policy  PlaybackPolicy
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

// ChangeCollectionSettings changes what is given (nil: unchanged).
type ChangeCollectionSettings struct {
	Account        string
	PlaybackPolicy *PlaybackPolicy
	Downloads      *bool
}

func checkLabel(op, label string) error {
	if label == "" {
		return nil
	}
	return checkName(op, "label", strings.TrimSpace(label))
}
