package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
)

// Aggregate kinds. Each is the first token of its events' subjects:
// <aggregate>.<id>.<EventType>.
const (
	AggVideo      = "video"
	AggCollection = "collection"
	AggAccount    = "account"
	AggWebhook    = "webhook"
)

// Payload is the data of one event type. Every payload names its type and
// aggregate explicitly; nothing is derived by reflection.
type Payload interface {
	EventType() string
	Aggregate() string
}

// Refused stands in a reader's hands for a stored message that is not the
// event its subject says: its body names another aggregate, id or type, or
// cannot be read as an event at all.
// NATS permissions are by subject, so a client allowed to write only
// video.*.TranscodeFailed could otherwise store a KeyIssued under it.
// Readers of the stream get a Refused in that message's place (sequences
// stay contiguous) and apply nothing. It is never stored.
type Refused struct {
	Subject string // where it was stored
	Named   string // the <aggregate>.<id>.<Type> its body names, if it could be read
	Reason  string // why it was refused
}

func (Refused) EventType() string { return "Refused" }
func (Refused) Aggregate() string { return "" }

// Event is one fact in the stream. ID, OccurredAt and Seq are given by the
// edge (eventstore), never by the domain.
type Event struct {
	ID          string    // ULID, also the JetStream Nats-Msg-Id
	Type        string    // explicit type string, e.g. "UploadAccepted"
	Version     int       // schema version of Data as written
	AggregateID string    // e.g. the video id
	OccurredAt  time.Time // UTC, millisecond precision
	Seq         uint64    // stream sequence; 0 until stored
	Data        Payload   // decoded and upcast to the current version
}

// StreamID names one aggregate instance.
type StreamID struct {
	Aggregate string
	ID        string
}

// Filter is the subject filter covering every event of the aggregate.
func (s StreamID) Filter() string { return s.Aggregate + "." + s.ID + ".*" }

// Subject is the subject an event of type t is stored under.
func (s StreamID) Subject(t string) string { return s.Aggregate + "." + s.ID + "." + t }

func (s StreamID) String() string { return s.Aggregate + " " + s.ID }

// envelope is the JSON body of every stored event.
type envelope struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Version     int             `json:"version"`
	Aggregate   string          `json:"aggregate"`
	AggregateID string          `json:"aggregateId"`
	OccurredAt  string          `json:"occurredAt"`
	Data        json.RawMessage `json:"data"`
}

// TimeFormat is how kino writes instants: ISO 8601 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// FormatTime formats t as TimeFormat in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Encode serialises an event for the stream, at its type's current version.
func Encode(e Event) ([]byte, error) {
	if e.Data == nil {
		return nil, fmt.Errorf("encode event %s: no data", e.ID)
	}
	spec, ok := registry[e.Data.EventType()]
	if !ok {
		return nil, fmt.Errorf("encode event: unknown type %q", e.Data.EventType())
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.Data.EventType(), err)
	}
	return json.Marshal(envelope{
		ID:          e.ID,
		Type:        e.Data.EventType(),
		Version:     spec.version,
		Aggregate:   e.Data.Aggregate(),
		AggregateID: e.AggregateID,
		OccurredAt:  FormatTime(e.OccurredAt),
		Data:        data,
	})
}

// Decode parses a stored event, upcasting older schema versions so callers
// only ever see the current shape.
func Decode(b []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	spec, ok := registry[env.Type]
	if !ok {
		return Event{}, fmt.Errorf("decode event %s: unknown type %q", env.ID, env.Type)
	}
	if env.Version < 1 || env.Version > spec.version {
		return Event{}, fmt.Errorf("decode event %s: %s version %d not known (current %d)", env.ID, env.Type, env.Version, spec.version)
	}
	raw := env.Data
	for v := env.Version; v < spec.version; v++ {
		up := spec.upcasters[v]
		if up == nil {
			return Event{}, fmt.Errorf("decode event %s: no upcaster for %s v%d", env.ID, env.Type, v)
		}
		var err error
		if raw, err = up(raw); err != nil {
			return Event{}, fmt.Errorf("decode event %s: upcast %s v%d: %w", env.ID, env.Type, v, err)
		}
	}
	data, err := spec.decode(raw)
	if err != nil {
		return Event{}, fmt.Errorf("decode event %s (%s): %w", env.ID, env.Type, err)
	}
	at, err := time.Parse(time.RFC3339Nano, env.OccurredAt)
	if err != nil {
		return Event{}, fmt.Errorf("decode event %s: occurredAt: %w", env.ID, err)
	}
	return Event{
		ID:          env.ID,
		Type:        env.Type,
		Version:     env.Version,
		AggregateID: env.AggregateID,
		OccurredAt:  at.UTC(),
		Data:        data,
	}, nil
}

// eventSpec describes one event type: its current schema version, how to
// decode the current version, and how to lift version v to v+1.
type eventSpec struct {
	version   int
	decode    func(json.RawMessage) (Payload, error)
	upcasters map[int]func(json.RawMessage) (json.RawMessage, error)
	current   func([]byte) (Event, error) // one-pass decoding at version
}

func decodeAs[T Payload](raw json.RawMessage) (Payload, error) {
	var p T
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeCurrent parses a whole event of type T in one pass, for events
// written at T's current version (nearly all of them), with json/v2's
// decoder: 2.6 times as fast as encoding/json's here, with a fifth of the
// allocations, which is most of a rebuild's speed (docs/performance.md).
// json/v2 matches names exactly and leaves what is absent empty, where
// encoding/json matches names in any case; so it takes only events exactly
// as Encode writes them (no unknown or differently cased member, an
// occurredAt, a data) and refuses the rest, which DecodeAs then reads with
// Decode: both always give the same Event or the same refusal.
func decodeCurrent[T Payload](b []byte) (Event, error) {
	var env struct {
		ID          string    `json:"id"`
		Type        string    `json:"type"`
		Version     int       `json:"version"`
		Aggregate   string    `json:"aggregate"`
		AggregateID string    `json:"aggregateId"`
		OccurredAt  time.Time `json:"occurredAt"`
		Data        *T        `json:"data"`
	}
	if err := jsonv2.Unmarshal(b, &env, exactly); err != nil {
		return Event{}, err
	}
	if env.OccurredAt.IsZero() || env.Data == nil {
		return Event{}, errNotAsWritten
	}
	return Event{ID: env.ID, Type: env.Type, Version: env.Version, AggregateID: env.AggregateID, OccurredAt: env.OccurredAt.UTC(), Data: *env.Data}, nil
}

var (
	exactly         = jsonv2.RejectUnknownMembers(true)
	errNotAsWritten = errors.New("not as Encode writes it")
)

// DecodeAs decodes an event whose type the caller already knows (from the
// message's Kino-Event-Type header): one JSON pass instead of two when it
// is at its type's current version; otherwise (or when t is unknown) it is
// Decode, upcasting included.
func DecodeAs(t string, b []byte) (Event, error) {
	spec, ok := registry[t]
	if !ok || spec.current == nil {
		return Decode(b)
	}
	e, err := spec.current(b)
	if err != nil || e.Version != spec.version || e.Type != t {
		return Decode(b)
	}
	return e, nil
}

// registry lists every event type ever written. Append only: a type is never
// renamed or removed; a new schema version bumps version and adds an upcaster.
var registry = map[string]eventSpec{
	TypeUploadAccepted: {version: 1, decode: decodeAs[UploadAccepted], current: decodeCurrent[UploadAccepted]},
	TypeVideoDeleted:   {version: 1, decode: decodeAs[VideoDeleted], current: decodeCurrent[VideoDeleted]},

	TypeTranscodeStarted:      {version: 1, decode: decodeAs[TranscodeStarted], current: decodeCurrent[TranscodeStarted]},
	TypeTranscodeSucceeded:    {version: 1, decode: decodeAs[TranscodeSucceeded], current: decodeCurrent[TranscodeSucceeded]},
	TypeTranscodeFailed:       {version: 1, decode: decodeAs[TranscodeFailed], current: decodeCurrent[TranscodeFailed]},
	TypeTranscodeInterrupted:  {version: 1, decode: decodeAs[TranscodeInterrupted], current: decodeCurrent[TranscodeInterrupted]},
	TypeTranscodePlayable:     {version: 1, decode: decodeAs[TranscodePlayable], current: decodeCurrent[TranscodePlayable]},
	TypeTranscodeRetried:      {version: 1, decode: decodeAs[TranscodeRetried], current: decodeCurrent[TranscodeRetried]},
	TypePlaybackPolicyChanged: {version: 1, decode: decodeAs[PlaybackPolicyChanged], current: decodeCurrent[PlaybackPolicyChanged]},
	TypeVideoDetailsChanged:   {version: 1, decode: decodeAs[VideoDetailsChanged], current: decodeCurrent[VideoDetailsChanged]},
	TypeThumbnailRequested:    {version: 1, decode: decodeAs[ThumbnailRequested], current: decodeCurrent[ThumbnailRequested]},
	TypeThumbnailChanged:      {version: 1, decode: decodeAs[ThumbnailChanged], current: decodeCurrent[ThumbnailChanged]},
	TypeCaptionTrackAdded:     {version: 1, decode: decodeAs[CaptionTrackAdded], current: decodeCurrent[CaptionTrackAdded]},
	TypeCaptionTrackRequested: {version: 1, decode: decodeAs[CaptionTrackRequested], current: decodeCurrent[CaptionTrackRequested]},
	TypeCaptionTrackReady:     {version: 1, decode: decodeAs[CaptionTrackReady], current: decodeCurrent[CaptionTrackReady]},
	TypeCaptionTrackFailed:    {version: 1, decode: decodeAs[CaptionTrackFailed], current: decodeCurrent[CaptionTrackFailed]},
	TypeCaptionTrackRemoved:   {version: 1, decode: decodeAs[CaptionTrackRemoved], current: decodeCurrent[CaptionTrackRemoved]},

	TypeCollectionCreated:         {version: 1, decode: decodeAs[CollectionCreated], current: decodeCurrent[CollectionCreated]},
	TypeCollectionRenamed:         {version: 1, decode: decodeAs[CollectionRenamed], current: decodeCurrent[CollectionRenamed]},
	TypeCollectionDeleted:         {version: 1, decode: decodeAs[CollectionDeleted], current: decodeCurrent[CollectionDeleted]},
	TypeCollectionSettingsChanged: {version: 1, decode: decodeAs[CollectionSettingsChanged], current: decodeCurrent[CollectionSettingsChanged]},

	TypeAccountCreated:      {version: 1, decode: decodeAs[AccountCreated], current: decodeCurrent[AccountCreated]},
	TypePlanChanged:         {version: 1, decode: decodeAs[PlanChanged], current: decodeCurrent[PlanChanged]},
	TypeStorageQuotaChanged: {version: 1, decode: decodeAs[StorageQuotaChanged], current: decodeCurrent[StorageQuotaChanged]},
	TypeKeyIssued:           {version: 1, decode: decodeAs[KeyIssued], current: decodeCurrent[KeyIssued]},
	TypeKeyRevoked:          {version: 1, decode: decodeAs[KeyRevoked], current: decodeCurrent[KeyRevoked]},
	TypeSigningKeyCreated:   {version: 1, decode: decodeAs[SigningKeyCreated], current: decodeCurrent[SigningKeyCreated]},
	TypeSigningKeyDeleted:   {version: 1, decode: decodeAs[SigningKeyDeleted], current: decodeCurrent[SigningKeyDeleted]},

	TypeWebhookSubscribed: {version: 2, decode: decodeAs[WebhookSubscribed], current: decodeCurrent[WebhookSubscribed],
		upcasters: map[int]func(json.RawMessage) (json.RawMessage, error){1: upcastWebhookSubscribedV1}},
	TypeWebhookDeleted:      {version: 1, decode: decodeAs[WebhookDeleted], current: decodeCurrent[WebhookDeleted]},
	TypeDeliverySucceeded:   {version: 1, decode: decodeAs[DeliverySucceeded], current: decodeCurrent[DeliverySucceeded]},
	TypeDeliveryFailed:      {version: 1, decode: decodeAs[DeliveryFailed], current: decodeCurrent[DeliveryFailed]},
	TypeDeliveryRedelivered: {version: 1, decode: decodeAs[DeliveryRedelivered], current: decodeCurrent[DeliveryRedelivered]},

	TypeUserCreated:        {version: 1, decode: decodeAs[UserCreated], current: decodeCurrent[UserCreated]},
	TypePasswordLinkIssued: {version: 1, decode: decodeAs[PasswordLinkIssued], current: decodeCurrent[PasswordLinkIssued]},
	TypePasswordSet:        {version: 1, decode: decodeAs[PasswordSet], current: decodeCurrent[PasswordSet]},
	TypeUserRemoved:        {version: 1, decode: decodeAs[UserRemoved], current: decodeCurrent[UserRemoved]},
}

// EventTypes lists every registered event type with its current version.
func EventTypes() map[string]int {
	out := make(map[string]int, len(registry))
	for t, s := range registry {
		out[t] = s.version
	}
	return out
}

// State is an aggregate's folded history. Evolve is pure and never fails:
// events are facts.
type State[S any] interface {
	Evolve(Event) S
}

// Fold applies events in order to the zero state.
func Fold[S State[S]](events []Event) S {
	var s S
	for _, e := range events {
		s = s.Evolve(e)
	}
	return s
}
