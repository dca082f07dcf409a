package domain_test

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// sample is one payload of a registered event type, with the envelope that
// version 1 of kino wrote for it. The v1 text is frozen: never edit it, since
// streams already hold events in exactly this form. A new schema version adds
// an upcaster, and the expected payload changes; the v1 text does not.
type sample struct {
	aggregateID string
	payload     domain.Payload
	v1          string
	v1Payload   domain.Payload // what v1 decodes to, when not payload (the upcast differs)
}

// samples holds one sample per registered event type; TestSamplesCoverRegistry
// fails when a type is registered without one.
var samples = map[string]sample{
	domain.TypeUploadAccepted: {
		aggregateID: videoID,
		payload:     func() domain.UploadAccepted { a := accepted; a.Title = ""; return a }(), // as written before details
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"UploadAccepted","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","collection":"holiday","collectionName":"Holiday 2026","filename":"Clip.MP4","originalSize":1234,"ext":".mp4"}}`,
	},
	domain.TypeVideoDeleted: {
		aggregateID: videoID,
		payload:     domain.VideoDeleted{Account: "acme"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"Deleted","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme"}}`,
	},
	domain.TypeTranscodeStarted: {
		aggregateID: videoID,
		payload:     domain.TranscodeStarted{Account: "acme", Attempt: 1, Worker: "host-1"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"TranscodeStarted","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","attempt":1,"worker":"host-1"}}`,
	},
	domain.TypeTranscodeSucceeded: {
		aggregateID: videoID,
		payload: domain.TranscodeSucceeded{Account: "acme", Attempt: 1, Duration: 2.04, Width: 1280, Height: 720, HasAudio: true,
			Resolutions: []string{"720p", "480p"}, ProcessedSize: 987654},
		v1: `{"id":"01JFIXTURE0000000000000001","type":"TranscodeSucceeded","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","attempt":1,"duration":2.04,"width":1280,"height":720,"hasAudio":true,"resolutions":["720p","480p"],"processedSize":987654}}`,
	},
	domain.TypeTranscodeInterrupted: {
		aggregateID: videoID,
		payload:     domain.TranscodeInterrupted{Account: "acme", Attempt: 1, Reason: "crash"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"TranscodeInterrupted","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","attempt":1,"reason":"crash"}}`,
	},
	domain.TypeTranscodeFailed: {
		aggregateID: videoID,
		payload:     domain.TranscodeFailed{Account: "acme", Attempt: 2, Final: true, Reason: "The file is truncated or corrupt."},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"TranscodeFailed","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","attempt":2,"final":true,"reason":"The file is truncated or corrupt."}}`,
	},
	domain.TypeDeliverySucceeded: {
		aggregateID: "01JWEBHOOK0000000000000001",
		payload: domain.DeliverySucceeded{Account: "acme", DeliveryID: "dlv_0123456789abcdef", EventID: "01JEVENT00000000000000000A",
			Kind: "video.completed", VideoID: videoID, Attempt: 3, StatusCode: 204, DurationMs: 12},
		v1: `{"id":"01JFIXTURE0000000000000001","type":"DeliverySucceeded","version":1,"aggregate":"webhook","aggregateId":"01JWEBHOOK0000000000000001","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","deliveryId":"dlv_0123456789abcdef","eventId":"01JEVENT00000000000000000A","kind":"video.completed","videoId":"01JVIDEO00000000000000000A","attempt":3,"statusCode":204,"durationMs":12}}`,
	},
	domain.TypeDeliveryFailed: {
		aggregateID: "01JWEBHOOK0000000000000001",
		payload: domain.DeliveryFailed{Account: "acme", DeliveryID: "dlv_0123456789abcdef", EventID: "01JEVENT00000000000000000A",
			Kind: "video.failed", VideoID: videoID, Attempt: 1, StatusCode: 500, Error: "HTTP 500", DurationMs: 7},
		v1: `{"id":"01JFIXTURE0000000000000001","type":"DeliveryFailed","version":1,"aggregate":"webhook","aggregateId":"01JWEBHOOK0000000000000001","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","deliveryId":"dlv_0123456789abcdef","eventId":"01JEVENT00000000000000000A","kind":"video.failed","videoId":"01JVIDEO00000000000000000A","attempt":1,"statusCode":500,"error":"HTTP 500","durationMs":7,"gaveUp":false}}`,
	},
	domain.TypeDeliveryRedelivered: {
		aggregateID: "01JWEBHOOK0000000000000001",
		payload: domain.DeliveryRedelivered{Account: "acme", DeliveryID: "dlv_fedcba9876543210fedcba98", RedeliveryOf: "dlv_0123456789abcdef01234567",
			EventID: "01JEVENT00000000000000000A", Kind: "video.failed", VideoID: videoID},
		v1: `{"id":"01JFIXTURE0000000000000001","type":"DeliveryRedelivered","version":1,"aggregate":"webhook","aggregateId":"01JWEBHOOK0000000000000001","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","deliveryId":"dlv_fedcba9876543210fedcba98","redeliveryOf":"dlv_0123456789abcdef01234567","eventId":"01JEVENT00000000000000000A","kind":"video.failed","videoId":"01JVIDEO00000000000000000A"}}`,
	},
	domain.TypeCollectionCreated: {
		aggregateID: "acme_holiday",
		payload:     holiday,
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CollectionCreated","version":1,"aggregate":"collection","aggregateId":"acme_holiday","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","slug":"holiday","name":"Holiday"}}`,
	},
	domain.TypeCollectionRenamed: {
		aggregateID: "acme_holiday",
		payload:     domain.CollectionRenamed{Account: "acme", Slug: "holiday", Name: "Summer"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CollectionRenamed","version":1,"aggregate":"collection","aggregateId":"acme_holiday","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","slug":"holiday","name":"Summer"}}`,
	},
	domain.TypeCollectionDeleted: {
		aggregateID: "acme_holiday",
		payload:     domain.CollectionDeleted{Account: "acme", Slug: "holiday"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CollectionDeleted","version":1,"aggregate":"collection","aggregateId":"acme_holiday","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","slug":"holiday"}}`,
	},
	domain.TypeAccountCreated: {
		aggregateID: "acme",
		payload:     domain.AccountCreated{Plan: domain.PlanPro},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"AccountCreated","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"plan":"pro"}}`,
	},
	domain.TypePlanChanged: {
		aggregateID: "acme",
		payload:     domain.PlanChanged{Plan: domain.PlanBusiness},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"PlanChanged","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"plan":"business"}}`,
	},
	domain.TypeStorageQuotaChanged: {
		aggregateID: "acme",
		payload:     domain.StorageQuotaChanged{Bytes: ptr(int64(53687091200))},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"StorageQuotaChanged","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"bytes":53687091200}}`,
	},
	domain.TypeKeyIssued: {
		aggregateID: "acme",
		payload:     keyA,
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"KeyIssued","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"keyId":"key-a","hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","prefix":"svc_live_AAAA","label":"laptop"}}`,
	},
	domain.TypeKeyRevoked: {
		aggregateID: "acme",
		payload:     domain.KeyRevoked{KeyID: "key-a", Hash: hashA},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"KeyRevoked","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"keyId":"key-a","hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}`,
	},
	domain.TypeWebhookSubscribed: {
		aggregateID: webhookID,
		payload:     subscribed,
		// v1 held the secret in clear; its upcast keeps it there.
		v1Payload: domain.WebhookSubscribed{Account: "acme", URL: "https://example.com/hooks/kino",
			Events: []string{domain.EventVideoCompleted, domain.EventVideoFailed}, Secret: "0123456789abcdef0123456789abcdef"},
		v1: `{"id":"01JFIXTURE0000000000000001","type":"WebhookSubscribed","version":1,"aggregate":"webhook","aggregateId":"01JHOOK000000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","url":"https://example.com/hooks/kino","events":["video.completed","video.failed"],"secret":"0123456789abcdef0123456789abcdef"}}`,
	},
	domain.TypeWebhookDeleted: {
		aggregateID: webhookID,
		payload:     domain.WebhookDeleted{Account: "acme"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"WebhookDeleted","version":1,"aggregate":"webhook","aggregateId":"01JHOOK000000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme"}}`,
	},
	domain.TypeUserCreated: {
		aggregateID: userKey,
		payload:     userCreated,
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"UserCreated","version":1,"aggregate":"user","aggregateId":"0123456789abcdef0123456789abcdef","occurredAt":"2026-01-02T03:04:05.006Z","data":{"userId":"01JUSER0000000000000000001","email":"ada@example.com","account":"acme","linkHash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","linkExpiresAt":"2026-01-03T03:04:05.006Z"}}`,
	},
	domain.TypePasswordLinkIssued: {
		aggregateID: userKey,
		payload:     domain.PasswordLinkIssued{UserID: userID, LinkHash: hashB, LinkExpiresAt: linkExpiry},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"PasswordLinkIssued","version":1,"aggregate":"user","aggregateId":"0123456789abcdef0123456789abcdef","occurredAt":"2026-01-02T03:04:05.006Z","data":{"userId":"01JUSER0000000000000000001","linkHash":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","linkExpiresAt":"2026-01-03T03:04:05.006Z"}}`,
	},
	domain.TypePasswordSet: {
		aggregateID: userKey,
		payload:     domain.PasswordSet{UserID: userID, Hash: pwHash, LinkHash: hashB},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"PasswordSet","version":1,"aggregate":"user","aggregateId":"0123456789abcdef0123456789abcdef","occurredAt":"2026-01-02T03:04:05.006Z","data":{"userId":"01JUSER0000000000000000001","hash":"$argon2id$v=19$m=47104,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g","linkHash":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}}`,
	},
	domain.TypeUserRemoved: {
		aggregateID: userKey,
		payload:     domain.UserRemoved{UserID: userID},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"UserRemoved","version":1,"aggregate":"user","aggregateId":"0123456789abcdef0123456789abcdef","occurredAt":"2026-01-02T03:04:05.006Z","data":{"userId":"01JUSER0000000000000000001"}}`,
	},
	domain.TypePlaybackPolicyChanged: {
		aggregateID: videoID,
		payload:     domain.PlaybackPolicyChanged{Account: "acme", Policy: domain.PlaybackSigned},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"PlaybackPolicyChanged","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","playbackPolicy":"signed"}}`,
	},
	domain.TypeVideoDetailsChanged: {
		aggregateID: videoID,
		payload: domain.VideoDetailsChanged{Account: "acme", Title: "Launch talk", Description: "Our launch.\nWith questions.",
			Tags: []string{"launch", "talk"}, Metadata: map[string]string{"order_id": "A-42"}},
		v1: `{"id":"01JFIXTURE0000000000000001","type":"VideoDetailsChanged","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","title":"Launch talk","description":"Our launch.\nWith questions.","tags":["launch","talk"],"metadata":{"order_id":"A-42"}}}`,
	},
	domain.TypeThumbnailRequested: {
		aggregateID: videoID,
		payload:     domain.ThumbnailRequested{Account: "acme", At: 12.5},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"ThumbnailRequested","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","at":12.5}}`,
	},
	domain.TypeThumbnailChanged: {
		aggregateID: videoID,
		payload:     domain.ThumbnailChanged{Account: "acme", At: 12.5, Animated: true},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"ThumbnailChanged","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","at":12.5,"animated":true}}`,
	},
	domain.TypeCaptionTrackAdded: {
		aggregateID: videoID,
		payload: domain.CaptionTrackAdded{Account: "acme", Track: "01JTRACK00000000000000000A", Language: "en", Label: "English", Default: true,
			VTT: "WEBVTT\n\n00:00:01.000 --> 00:00:03.500\nHello, <i>world</i>.\n", Cues: 1},
		v1: `{"id":"01JFIXTURE0000000000000001","type":"CaptionTrackAdded","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","track":"01JTRACK00000000000000000A","language":"en","label":"English","default":true,"vtt":"WEBVTT\n\n00:00:01.000 --\u003e 00:00:03.500\nHello, \u003ci\u003eworld\u003c/i\u003e.\n","cues":1}}`,
	},
	domain.TypeCaptionTrackRequested: {
		aggregateID: videoID,
		payload:     domain.CaptionTrackRequested{Account: "acme", Track: "01JTRACK00000000000000000B", Language: "en", Label: "English (auto-generated)"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CaptionTrackRequested","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","track":"01JTRACK00000000000000000B","language":"en","label":"English (auto-generated)"}}`,
	},
	domain.TypeCaptionTrackReady: {
		aggregateID: videoID,
		payload:     domain.CaptionTrackReady{Account: "acme", Track: "01JTRACK00000000000000000B", VTT: "WEBVTT\n\n00:00:00.800 --> 00:00:02.900\nthe quick brown fox\n", Cues: 1},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CaptionTrackReady","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","track":"01JTRACK00000000000000000B","vtt":"WEBVTT\n\n00:00:00.800 --\u003e 00:00:02.900\nthe quick brown fox\n","cues":1}}`,
	},
	domain.TypeCaptionTrackFailed: {
		aggregateID: videoID,
		payload:     domain.CaptionTrackFailed{Account: "acme", Track: "01JTRACK00000000000000000B", Reason: "The video has no audio to caption."},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CaptionTrackFailed","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","track":"01JTRACK00000000000000000B","reason":"The video has no audio to caption."}}`,
	},
	domain.TypeCaptionTrackRemoved: {
		aggregateID: videoID,
		payload:     domain.CaptionTrackRemoved{Account: "acme", Track: "01JTRACK00000000000000000A"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CaptionTrackRemoved","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","track":"01JTRACK00000000000000000A"}}`,
	},
	domain.TypeTranscodePlayable: {
		aggregateID: videoID,
		payload:     domain.TranscodePlayable{Account: "acme", Attempt: 1, Resolutions: []string{"720p", "480p"}},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"TranscodePlayable","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","attempt":1,"resolutions":["720p","480p"]}}`,
	},
	domain.TypeTranscodeRetried: {
		aggregateID: videoID,
		payload:     domain.TranscodeRetried{Account: "acme"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"TranscodeRetried","version":1,"aggregate":"video","aggregateId":"01JVIDEO00000000000000000A","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme"}}`,
	},
	domain.TypeCollectionSettingsChanged: {
		aggregateID: "acme_holiday",
		payload:     domain.CollectionSettingsChanged{Account: "acme", Slug: "holiday", PlaybackPolicy: domain.PlaybackSigned},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"CollectionSettingsChanged","version":1,"aggregate":"collection","aggregateId":"acme_holiday","occurredAt":"2026-01-02T03:04:05.006Z","data":{"account":"acme","slug":"holiday","playbackPolicy":"signed","downloads":false}}`,
	},
	domain.TypeSigningKeyCreated: {
		aggregateID: "acme",
		payload:     domain.SigningKeyCreated{KeyID: "01JSIGN000000000000000000A", Algorithm: "EdDSA", PublicKey: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", Label: "backend"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"SigningKeyCreated","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"keyId":"01JSIGN000000000000000000A","algorithm":"EdDSA","publicKey":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","label":"backend"}}`,
	},
	domain.TypeSigningKeyDeleted: {
		aggregateID: "acme",
		payload:     domain.SigningKeyDeleted{KeyID: "01JSIGN000000000000000000A"},
		v1:          `{"id":"01JFIXTURE0000000000000001","type":"SigningKeyDeleted","version":1,"aggregate":"account","aggregateId":"acme","occurredAt":"2026-01-02T03:04:05.006Z","data":{"keyId":"01JSIGN000000000000000000A"}}`,
	},
}

const fixtureID = "01JFIXTURE0000000000000001"

var fixtureTime = time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

// registeredTypes returns the registered event types in a stable order.
func registeredTypes() []string {
	return slices.Sorted(maps.Keys(domain.EventTypes()))
}

func TestSamplesCoverRegistry(t *testing.T) {
	types := domain.EventTypes()
	if len(types) == 0 {
		t.Fatal("EventTypes() is empty")
	}
	for _, typ := range registeredTypes() {
		s, ok := samples[typ]
		if !ok {
			t.Errorf("event type %q is registered but has no sample in event_test.go; add one with its frozen v1 envelope", typ)
			continue
		}
		if got := s.payload.EventType(); got != typ {
			t.Errorf("samples[%q] holds a %T of type %q", typ, s.payload, got)
		}
		if types[typ] < 1 {
			t.Errorf("event type %q has version %d; versions start at 1", typ, types[typ])
		}
	}
	for typ := range samples {
		if _, ok := types[typ]; !ok {
			t.Errorf("samples has %q, which is not registered", typ)
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	// An instant off UTC and finer than a millisecond: the stream keeps it in
	// UTC to the millisecond.
	at := time.Date(2026, 1, 2, 4, 4, 5, 6_789_123, time.FixedZone("CET", 3600))
	wantAt := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	versions := domain.EventTypes()

	for _, typ := range registeredTypes() {
		t.Run(typ, func(t *testing.T) {
			s, ok := samples[typ]
			if !ok {
				t.Fatalf("no sample for %q", typ)
			}
			in := domain.Event{ID: fixtureID, AggregateID: s.aggregateID, OccurredAt: at, Seq: 42, Data: s.payload}
			b, err := domain.Encode(in)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}

			var env map[string]any
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatalf("Encode wrote invalid JSON %s: %v", b, err)
			}
			if env["type"] != typ || env["aggregate"] != s.payload.Aggregate() || env["version"] != float64(versions[typ]) {
				t.Fatalf("envelope %s: want type %q, aggregate %q, version %d", b, typ, s.payload.Aggregate(), versions[typ])
			}

			out, err := domain.Decode(b)
			if err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			if !out.OccurredAt.Equal(wantAt) || out.OccurredAt.Location() != time.UTC {
				t.Fatalf("OccurredAt = %v; want %v", out.OccurredAt, wantAt)
			}
			out.OccurredAt = time.Time{}
			want := domain.Event{
				ID: fixtureID, Type: typ, Version: versions[typ], AggregateID: s.aggregateID,
				Data: s.payload, // Seq is the store's to set, not the codec's
			}
			if !reflect.DeepEqual(out, want) {
				t.Fatalf("Decode(Encode(e)) =\n\t%#v\nwant\n\t%#v", out, want)
			}
		})
	}
}

func TestDecodeFrozenV1(t *testing.T) {
	for _, typ := range registeredTypes() {
		t.Run(typ, func(t *testing.T) {
			s, ok := samples[typ]
			if !ok {
				t.Fatalf("no sample for %q", typ)
			}
			got, err := domain.Decode([]byte(s.v1))
			if err != nil {
				t.Fatalf("Decode(v1): %v", err)
			}
			want := domain.Event{
				ID: fixtureID, Type: typ, Version: 1, AggregateID: s.aggregateID,
				OccurredAt: fixtureTime, Data: s.payload,
			}
			if s.v1Payload != nil {
				want.Data = s.v1Payload
			}
			if !got.OccurredAt.Equal(want.OccurredAt) {
				t.Fatalf("OccurredAt = %v; want %v", got.OccurredAt, want.OccurredAt)
			}
			got.OccurredAt = want.OccurredAt
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode(v1) =\n\t%#v\nwant\n\t%#v", got, want)
			}

			// While v1 is current, Encode must write the same bytes.
			if domain.EventTypes()[typ] != 1 {
				return
			}
			b, err := domain.Encode(got)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if string(b) != s.v1 {
				t.Fatalf("Encode wrote\n\t%s\nthe frozen v1 envelope is\n\t%s", b, s.v1)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	current := domain.EventTypes()[domain.TypeUploadAccepted]
	// mutate returns the frozen UploadAccepted envelope changed by f.
	mutate := func(f func(env map[string]any)) []byte {
		t.Helper()
		var env map[string]any
		if err := json.Unmarshal([]byte(samples[domain.TypeUploadAccepted].v1), &env); err != nil {
			t.Fatal(err)
		}
		f(env)
		b, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Check the base is decodable, or every row below would pass for the
	// wrong reason.
	if _, err := domain.Decode(mutate(func(map[string]any) {})); err != nil {
		t.Fatalf("the unmodified envelope does not decode: %v", err)
	}

	tests := []struct {
		name string
		in   []byte
	}{
		{name: "unknown type", in: mutate(func(e map[string]any) { e["type"] = "VideoExploded" })},
		{name: "type in another case", in: mutate(func(e map[string]any) { e["type"] = "uploadaccepted" })},
		{name: "empty type", in: mutate(func(e map[string]any) { e["type"] = "" })},
		{name: "version 0", in: mutate(func(e map[string]any) { e["version"] = 0 })},
		{name: "version missing", in: mutate(func(e map[string]any) { delete(e, "version") })},
		{name: "negative version", in: mutate(func(e map[string]any) { e["version"] = -1 })},
		{name: "version above current", in: mutate(func(e map[string]any) { e["version"] = current + 1 })},
		{name: "version as a string", in: mutate(func(e map[string]any) { e["version"] = "1" })},
		{name: "data of the wrong shape", in: mutate(func(e map[string]any) { e["data"] = "clip.mp4" })},
		{name: "field of the wrong type", in: mutate(func(e map[string]any) { e["data"].(map[string]any)["originalSize"] = "big" })},
		{name: "data missing", in: mutate(func(e map[string]any) { delete(e, "data") })},
		{name: "occurredAt not a time", in: mutate(func(e map[string]any) { e["occurredAt"] = "yesterday" })},
		{name: "occurredAt missing", in: mutate(func(e map[string]any) { delete(e, "occurredAt") })},
		{name: "not JSON", in: []byte("UploadAccepted")},
		{name: "empty", in: nil},
		{name: "JSON array", in: []byte(`[1,2]`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if e, err := domain.Decode(tc.in); err == nil {
				t.Fatalf("Decode(%s) = %#v, nil; want an error", tc.in, e)
			}
		})
	}
}

func TestDecodeNormalizesOccurredAtToUTC(t *testing.T) {
	// kino writes Z, but an instant with an offset is still the same instant
	// and must come back in UTC.
	var env map[string]any
	if err := json.Unmarshal([]byte(samples[domain.TypeVideoDeleted].v1), &env); err != nil {
		t.Fatal(err)
	}
	env["occurredAt"] = "2026-01-02T05:04:05.006+02:00"
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	e, err := domain.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !e.OccurredAt.Equal(fixtureTime) || e.OccurredAt.Location() != time.UTC {
		t.Fatalf("OccurredAt = %v; want %v", e.OccurredAt, fixtureTime)
	}
}

// bogus is a payload whose type was never registered.
type bogus struct{}

func (bogus) EventType() string { return "Bogus" }
func (bogus) Aggregate() string { return domain.AggVideo }

func TestEncodeRejectsUnregisteredType(t *testing.T) {
	b, err := domain.Encode(domain.Event{ID: fixtureID, AggregateID: videoID, OccurredAt: fixtureTime, Data: bogus{}})
	if err == nil {
		t.Fatalf("Encode(bogus) = %s, nil; want an error", b)
	}
}

func TestFormatTime(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{name: "UTC", in: time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC), want: "2026-01-02T03:04:05.006Z"},
		{name: "another zone", in: time.Date(2026, 1, 2, 5, 4, 5, 6_000_000, time.FixedZone("EET", 2*3600)), want: "2026-01-02T03:04:05.006Z"},
		{name: "zone crossing the date", in: time.Date(2026, 1, 1, 22, 4, 5, 6_000_000, time.FixedZone("EST", -5*3600)), want: "2026-01-02T03:04:05.006Z"},
		{name: "sub-millisecond digits dropped", in: time.Date(2026, 1, 2, 3, 4, 5, 6_000_999, time.UTC), want: "2026-01-02T03:04:05.006Z"},
		{name: "whole second keeps three digits", in: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), want: "2026-01-02T03:04:05.000Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domain.FormatTime(tc.in); got != tc.want {
				t.Fatalf("FormatTime(%v) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStreamID(t *testing.T) {
	s := domain.StreamID{Aggregate: domain.AggVideo, ID: videoID}
	tests := []struct {
		name, got, want string
	}{
		{name: "filter", got: s.Filter(), want: "video." + videoID + ".*"},
		{name: "subject", got: s.Subject(domain.TypeUploadAccepted), want: "video." + videoID + ".UploadAccepted"},
		{name: "string", got: s.String(), want: "video " + videoID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q; want %q", tc.got, tc.want)
			}
		})
	}
}
