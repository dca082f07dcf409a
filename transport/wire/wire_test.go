package wire_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func ptr[T any](v T) *T { return &v }

var (
	created = time.Date(2026, 11, 22, 12, 0, 10, 123e6, time.UTC)
	updated = time.Date(2026, 11, 22, 12, 1, 2, 5e6, time.UTC)
	record  = wire.VideoRecord{ID: "01JVIDEO00000000000000000A", Filename: "clip.mp4", OriginalSize: 1234,
		Collection: "main", CollectionName: "Main", CreatedAt: created, UpdatedAt: updated}
)

func with(r wire.VideoRecord, change func(*wire.VideoRecord)) wire.VideoRecord {
	change(&r)
	return r
}

const cdn = "https://cdn.example.test/media"

// Every resource kino writes, as bytes: the golden files are the wire
// format (docs/openapi.yaml describes the same). Each must decode into its
// type and encode again to the same bytes.
func TestGolden(t *testing.T) {
	completed := wire.NewVideo(with(record, func(r *wire.VideoRecord) {
		r.Status, r.Duration, r.ProcessedSize, r.Resolutions = domain.StatusCompleted, ptr(2.5), ptr(int64(4321)), []string{"720p", "480p"}
	}), cdn, wire.Live{Progress: 0.3})
	tests := []struct {
		name string
		v    any
	}{
		{"video_pending", wire.NewVideo(with(record, func(r *wire.VideoRecord) { r.Status = domain.StatusPending }), cdn, wire.Live{Progress: 0.5})},
		{"video_processing", wire.NewVideo(with(record, func(r *wire.VideoRecord) { r.Status = domain.StatusProcessing }), cdn, wire.Live{Progress: 0.425})},
		{"video_completed", completed},
		{"video_failed", wire.NewVideo(with(record, func(r *wire.VideoRecord) {
			r.Status, r.ErrorMessage = domain.StatusFailed, ptr("No video stream found.")
		}), cdn, wire.Live{Progress: 0.7})},
		{"videos", wire.Videos{Videos: []wire.Video{completed}}},
		{"video_pending_queued", wire.NewVideo(with(record, func(r *wire.VideoRecord) { r.Status = domain.StatusPending }), cdn, wire.Live{QueuePosition: ptr(3)})},
		{"video_processing_playable", wire.NewVideo(with(record, func(r *wire.VideoRecord) {
			r.Status, r.Playable, r.PlaybackPolicy = domain.StatusProcessing, true, domain.PlaybackSigned
		}), cdn, wire.Live{Progress: 0.5, Speed: ptr(2.25), ETA: ptr(12.0)})},
		{"video_completed_extras", wire.NewVideo(with(record, func(r *wire.VideoRecord) {
			r.Status, r.Duration, r.ProcessedSize, r.Resolutions = domain.StatusCompleted, ptr(2.5), ptr(int64(4321)), []string{"720p", "480p"}
			r.Storyboard, r.Download, r.Animated, r.ThumbnailTime = true, true, true, ptr(12.5)
			r.Details = domain.Details{Title: "Launch talk", Description: "Our launch.\nWith questions.",
				Tags: []string{"launch", "talk"}, Metadata: map[string]string{"order_id": "A-42"}}
			r.Captions = []wire.CaptionRecord{
				{ID: "01JTRACK00000000000000000A", Language: "en", Label: "English", Source: domain.CaptionUploaded, Default: true,
					Status: domain.CaptionReady, Cues: 12, CreatedAt: updated},
				{ID: "01JTRACK00000000000000000B", Language: "fr", Label: "Français (generated)", Source: domain.CaptionGenerated,
					Status: domain.CaptionFailed, ErrorMessage: "The video has no speech to caption.", CreatedAt: updated},
			}
		}), cdn, wire.Live{Speed: ptr(9.0), QueuePosition: ptr(1)})},
		{"playback_token", wire.PlaybackToken{Token: "eyJhbGciOiJIUzI1NiJ9.e30.sig", ExpiresAt: "2026-11-22T13:00:10.123Z"}},
		{"signing_keys", wire.SigningKeys{SigningKeys: []wire.SigningKey{{ID: "01JSIGN000000000000000000A", Algorithm: "EdDSA", Label: "backend", CreatedAt: "2026-11-22T12:00:10.123Z"}}}},
		{"signing_key_created", wire.CreatedSigningKey{ID: "01JSIGN000000000000000000A", Algorithm: "EdDSA", Label: "",
			PrivateKey: "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n", CreatedAt: "2026-11-22T12:00:10.123Z"}},
		{"collection", wire.Collection{Slug: "main", Name: "Main", VideoCount: 3, CreatedAt: "2026-11-22T12:00:10.123Z", UpdatedAt: "2026-11-22T12:01:02.005Z",
			PlaybackPolicy: domain.PlaybackSigned, Downloads: true}},
		{"collections", wire.Collections{Collections: []wire.Collection{}}},
		{"webhook", wire.Webhook{ID: "01JHOOK000000000000000000A", URL: "https://example.test/hook", Events: []string{"video.completed", "video.failed"}, CreatedAt: "2026-11-22T12:00:10.123Z"}},
		{"webhook_created", wire.CreatedWebhook{ID: "01JHOOK000000000000000000A", URL: "https://example.test/hook", Events: []string{"video.completed"}, Secret: "whsec_0123", CreatedAt: "2026-11-22T12:00:10.123Z"}},
		{"delivery_failed", wire.Delivery{DeliveryID: "dlv_0123456789abcdef01234567", EventID: "01JEVENT00000000000000000A", Event: "video.completed",
			VideoID: ptr("01JVIDEO00000000000000000A"), Attempt: 2, StatusCode: ptr(500), Error: ptr("the receiver answered 500"), DurationMs: 12, At: "2026-11-22T12:00:10.123Z"}},
		{"delivery_test_ok", wire.Delivery{DeliveryID: "dlv_0123456789abcdef01234567", EventID: "01JEVENT00000000000000000A", Event: "webhook.test",
			Attempt: 1, Succeeded: true, StatusCode: ptr(204), DurationMs: 3, At: "2026-11-22T12:00:10.123Z"}},
		{"error", wire.Error{Error: "Not found", Message: "video not found"}},
		{"message", wire.Message{Message: "Video deleted"}},
		{"uploaded", wire.Uploaded{Message: "Video uploaded and queued for processing",
			Video: wire.UploadedVideo{ID: "01JVIDEO00000000000000000A", Filename: "clip.mp4", Status: domain.StatusPending, Collection: "main"}}},
		{"test_queued", wire.TestQueued{Message: "Test delivery queued", DeliveryID: "dlv_0123456789abcdef01234567"}},
		{"webhook_body_video", wire.WebhookBody{ID: "01JEVENT00000000000000000A", Type: "video.completed", CreatedAt: "2026-11-22T12:01:02.005Z",
			Data: wire.WebhookData{Video: &completed}}},
		{"webhook_body_test", wire.WebhookBody{ID: "01JEVENT00000000000000000B", Type: "webhook.test", CreatedAt: "2026-11-22T12:01:02.005Z",
			Data: wire.WebhookData{Webhook: &wire.TestWebhook{ID: "01JHOOK000000000000000000A", URL: "https://example.test/hook", Events: []string{"video.completed"}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want = bytes.TrimSuffix(want, []byte("\n"))
			if !bytes.Equal(got, want) {
				t.Fatalf("encoded\n%s\nwant (%s)\n%s", got, path, want)
			}
			back := reflect.New(reflect.TypeOf(tc.v))
			if err := json.Unmarshal(want, back.Interface()); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back.Elem().Interface())
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("round trip gave\n%s (%v)", again, err)
			}
		})
	}
}

// The Video's fields follow its status: media URLs only when COMPLETED,
// progress null only when FAILED, resolutions never null.
func TestNewVideoByStatus(t *testing.T) {
	for _, tc := range []struct {
		status   domain.Status
		progress *float64
		urls     bool
	}{
		{domain.StatusPending, ptr(0.0), false},
		{domain.StatusProcessing, ptr(0.25), false},
		{domain.StatusCompleted, ptr(1.0), true},
		{domain.StatusFailed, nil, false},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			v := wire.NewVideo(with(record, func(r *wire.VideoRecord) { r.Status = tc.status }), cdn, wire.Live{Progress: 0.25})
			if (v.Progress == nil) != (tc.progress == nil) || (v.Progress != nil && *v.Progress != *tc.progress) {
				t.Fatalf("progress %v, want %v", v.Progress, tc.progress)
			}
			if (v.PlaylistURL != nil) != tc.urls || (v.ThumbnailURL != nil) != tc.urls || (v.PreviewURL != nil) != tc.urls {
				t.Fatalf("urls %v %v %v", v.PlaylistURL, v.ThumbnailURL, v.PreviewURL)
			}
			if v.Resolutions == nil {
				t.Fatal("resolutions null")
			}
		})
	}
}

// The bodies are byte-for-byte what the fan-out and test deliveries sent
// before the wire types existed (maps, whose keys encoding/json sorts).
func TestWebhookDataEncodesAsBefore(t *testing.T) {
	v := wire.NewVideo(record, cdn, wire.Live{})
	hook := wire.TestWebhook{ID: "01JHOOK000000000000000000A", URL: "https://example.test/hook", Events: []string{"video.failed"}}
	for _, tc := range []struct {
		name string
		now  wire.WebhookData
		then any
	}{
		{"video", wire.WebhookData{Video: &v}, map[string]any{"video": v}},
		{"test", wire.WebhookData{Webhook: &hook}, map[string]any{"webhook": map[string]any{"id": hook.ID, "url": hook.URL, "events": hook.Events}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now, err1 := json.Marshal(tc.now)
			then, err2 := json.Marshal(tc.then)
			if err1 != nil || err2 != nil || !bytes.Equal(now, then) {
				t.Fatalf("now %s\nthen %s", now, then)
			}
		})
	}
}

// The media URLs name the files the media store publishes.
func TestMediaPathsAreTheStoresFiles(t *testing.T) {
	for got, want := range map[string]string{
		wire.PlaylistPath:  media.HLSDir + "/" + media.MasterName,
		wire.ThumbnailPath: media.ThumbnailName,
		wire.PreviewPath:   media.PreviewName,
	} {
		if got != want {
			t.Errorf("%q, the store publishes %q", got, want)
		}
	}
}
