package domain_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

const videoID = "01JVIDEO00000000000000000A"

// upload is a valid AcceptUpload; cases change one field at a time.
func upload(mod func(*domain.AcceptUpload)) domain.AcceptUpload {
	c := domain.AcceptUpload{
		Account:        "acme",
		Collection:     "holiday",
		CollectionName: "Holiday 2026",
		Filename:       "Clip.MP4",
		Size:           1234,
		MaxSize:        domain.GiB,
	}
	if mod != nil {
		mod(&c)
	}
	return c
}

var accepted = domain.UploadAccepted{
	Account:        "acme",
	Collection:     "holiday",
	CollectionName: "Holiday 2026",
	Filename:       "Clip.MP4",
	OriginalSize:   1234,
	Ext:            ".mp4",
	Title:          "Clip",
}

// withMeta is an upload with details.
var withMeta = func() domain.UploadAccepted {
	a := accepted
	a.Title, a.Tags, a.Metadata = "Mine", []string{"x"}, map[string]string{"a": "1"}
	return a
}()

func ptr[T any](v T) *T { return &v }

func TestVideoDecide(t *testing.T) {
	name255 := strings.Repeat("é", 251) + ".mp4" // 255 characters, 506 bytes
	runDecide[domain.Video](t, videoID, []decideCase{
		{
			name: "upload accepted with the extension lower-cased",
			when: upload(nil),
			then: []domain.Payload{accepted},
		},
		{
			name: "upload of exactly the plan limit",
			when: upload(func(c *domain.AcceptUpload) { c.Size, c.MaxSize = 10*domain.MiB, 10*domain.MiB }),
			then: []domain.Payload{domain.UploadAccepted{
				Account: "acme", Collection: "holiday", CollectionName: "Holiday 2026",
				Filename: "Clip.MP4", OriginalSize: 10 * domain.MiB, Ext: ".mp4", Title: "Clip",
			}},
		},
		{
			name: "filename of 255 multi-byte characters",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = name255 }),
			then: []domain.Payload{domain.UploadAccepted{
				Account: "acme", Collection: "holiday", CollectionName: "Holiday 2026",
				Filename: name255, OriginalSize: 1234, Ext: ".mp4", Title: strings.Repeat("é", domain.MaxTitleLen),
			}},
		},
		{
			name: "upload with details, normalized",
			when: upload(func(c *domain.AcceptUpload) {
				c.Details = domain.Details{Title: "  Talk ", Description: "a\r\nb ", Tags: []string{"Go", "go", " video "},
					Metadata: map[string]string{"order_id": "42"}}
			}),
			then: []domain.Payload{domain.UploadAccepted{
				Account: "acme", Collection: "holiday", CollectionName: "Holiday 2026",
				Filename: "Clip.MP4", OriginalSize: 1234, Ext: ".mp4",
				Title: "Talk", Description: "a\nb", Tags: []string{"Go", "video"}, Metadata: map[string]string{"order_id": "42"},
			}},
		},
		{
			name: "upload with a title of bidi controls",
			when: upload(func(c *domain.AcceptUpload) { c.Details.Title = "a\u202eb" }),
			err:  domain.Invalid,
		},
		{
			name: "upload with a bad metadata key",
			when: upload(func(c *domain.AcceptUpload) { c.Details.Metadata = map[string]string{"a b": "x"} }),
			err:  domain.Invalid,
		},
		{
			name: "upload with too many tags",
			when: upload(func(c *domain.AcceptUpload) {
				for i := range domain.MaxTags + 1 {
					c.Details.Tags = append(c.Details.Tags, fmt.Sprint("t", i))
				}
			}),
			err: domain.Invalid,
		},
		{
			name:  "update: title and metadata merged",
			given: []domain.Payload{withMeta},
			when: domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Title: ptr("New"),
				Metadata: map[string]string{"b": "2", "a": ""}}},
			then: []domain.Payload{domain.VideoDetailsChanged{Account: "acme", Title: "New", Tags: []string{"x"}, Metadata: map[string]string{"b": "2"}}},
		},
		{
			name:  "update: an empty title is the default again; metadata cleared",
			given: []domain.Payload{withMeta},
			when:  domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Title: ptr(""), ClearMetadata: true}},
			then:  []domain.Payload{domain.VideoDetailsChanged{Account: "acme", Title: "Clip", Tags: []string{"x"}}},
		},
		{
			name:  "update: tags replaced",
			given: []domain.Payload{withMeta},
			when:  domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Tags: &[]string{"X"}}},
			then:  []domain.Payload{domain.VideoDetailsChanged{Account: "acme", Title: "Mine", Tags: []string{"X"}, Metadata: map[string]string{"a": "1"}}},
		},
		{
			name:  "update: the same details again write nothing",
			given: []domain.Payload{withMeta},
			when:  domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Title: ptr(" Mine ")}},
		},
		{
			name:  "update: policy and details together",
			given: []domain.Payload{accepted},
			when: domain.UpdateVideo{Account: "acme", Policy: ptr(domain.PlaybackSigned),
				Details: domain.DetailsPatch{Description: ptr("d")}},
			then: []domain.Payload{domain.PlaybackPolicyChanged{Account: "acme", Policy: domain.PlaybackSigned, DetailsFollow: true},
				domain.VideoDetailsChanged{Account: "acme", Title: "Clip", Description: "d"}},
		},
		{
			name:  "update: a bad tag changes nothing, policy neither",
			given: []domain.Payload{accepted},
			when: domain.UpdateVideo{Account: "acme", Policy: ptr(domain.PlaybackSigned),
				Details: domain.DetailsPatch{Tags: &[]string{"a,b"}}},
			err: domain.Invalid,
		},
		{
			name:  "update by another account",
			given: []domain.Payload{accepted},
			when:  domain.UpdateVideo{Account: "other", Details: domain.DetailsPatch{Title: ptr("x")}},
			err:   domain.NotFound,
		},
		{
			name:  "update of a deleted video",
			given: []domain.Payload{accepted, domain.VideoDeleted{Account: "acme"}},
			when:  domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Title: ptr("x")}},
			err:   domain.NotFound,
		},
		{
			name:  "upload twice",
			given: []domain.Payload{accepted},
			when:  upload(nil),
			err:   domain.Conflict,
		},
		{
			name:  "upload onto a deleted video id",
			given: []domain.Payload{accepted, domain.VideoDeleted{Account: "acme"}},
			when:  upload(nil),
			err:   domain.Conflict,
		},
		{
			name: "empty file",
			when: upload(func(c *domain.AcceptUpload) { c.Size = 0 }),
			err:  domain.Invalid,
		},
		{
			name: "negative size",
			when: upload(func(c *domain.AcceptUpload) { c.Size = -1 }),
			err:  domain.Invalid,
		},
		{
			name: "one byte over the plan limit",
			when: upload(func(c *domain.AcceptUpload) { c.Size, c.MaxSize = 10*domain.MiB+1, 10*domain.MiB }),
			err:  domain.TooLarge,
		},
		{
			name: "text file",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "notes.txt" }),
			err:  domain.Unsupported,
		},
		{
			name: "no extension",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "clip" }),
			err:  domain.Unsupported,
		},
		{
			name: "trailing dot",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "clip." }),
			err:  domain.Unsupported,
		},
		{
			name: "supported name before an unsupported extension",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "clip.mp4.exe" }),
			err:  domain.Unsupported,
		},
		{
			name: "filename with NUL",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "cl\x00ip.mp4" }),
			err:  domain.Invalid,
		},
		{
			name: "filename with newline",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "clip\n.mp4" }),
			err:  domain.Invalid,
		},
		{
			name: "filename with DEL",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "clip\x7f.mp4" }),
			err:  domain.Invalid,
		},
		{
			name: "filename of 256 characters",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = strings.Repeat("a", 252) + ".mp4" }),
			err:  domain.Invalid,
		},
		{
			name: "filename of 256 multi-byte characters",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "é" + name255 }),
			err:  domain.Invalid,
		},
		{
			name: "filename not valid UTF-8",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "clip\xff.mp4" }),
			err:  domain.Invalid,
		},
		{
			name: "empty filename",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "" }),
			err:  domain.Invalid,
		},
		{
			name: "blank filename",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = "  \t " }),
			err:  domain.Invalid,
		},
		{
			name:  "delete",
			given: []domain.Payload{accepted},
			when:  domain.DeleteVideo{Account: "acme"},
			then:  []domain.Payload{domain.VideoDeleted{Account: "acme"}},
		},
		{
			name:  "delete by another account",
			given: []domain.Payload{accepted},
			when:  domain.DeleteVideo{Account: "other"},
			err:   domain.NotFound,
		},
		{
			name:  "delete twice",
			given: []domain.Payload{accepted, domain.VideoDeleted{Account: "acme"}},
			when:  domain.DeleteVideo{Account: "acme"},
			err:   domain.NotFound,
		},
		{
			name: "delete a video never created",
			when: domain.DeleteVideo{Account: "acme"},
			err:  domain.NotFound,
		},
		{
			name: "unknown command",
			when: domain.CreateCollection{Account: "acme", Slug: "a", Name: "A"},
			err:  domain.Internal,
		},
	})
}

func TestVideoEvolve(t *testing.T) {
	tests := []struct {
		name  string
		given []domain.Payload
		want  domain.Video
	}{
		{
			name: "nothing happened",
			want: domain.Video{},
		},
		{
			name:  "upload accepted is pending",
			given: []domain.Payload{accepted},
			want: domain.Video{
				ID: videoID, Account: "acme", Collection: "holiday", Ext: ".mp4",
				Status: domain.StatusPending, Created: true, Policy: domain.PlaybackPublic,
				Filename: "Clip.MP4", Details: domain.Details{Title: "Clip"},
			},
		},
		{
			name:  "an older upload without a title: the filename's",
			given: []domain.Payload{func() domain.UploadAccepted { a := accepted; a.Title = ""; return a }()},
			want: domain.Video{
				ID: videoID, Account: "acme", Collection: "holiday", Ext: ".mp4",
				Status: domain.StatusPending, Created: true, Policy: domain.PlaybackPublic,
				Filename: "Clip.MP4", Details: domain.Details{Title: "Clip"},
			},
		},
		{
			name:  "details changed",
			given: []domain.Payload{accepted, domain.VideoDetailsChanged{Account: "acme", Title: "T", Tags: []string{"a"}}},
			want: domain.Video{
				ID: videoID, Account: "acme", Collection: "holiday", Ext: ".mp4",
				Status: domain.StatusPending, Created: true, Policy: domain.PlaybackPublic,
				Filename: "Clip.MP4", Details: domain.Details{Title: "T", Tags: []string{"a"}},
			},
		},
		{
			name:  "deleted",
			given: []domain.Payload{accepted, domain.VideoDeleted{Account: "acme"}},
			want: domain.Video{
				ID: videoID, Account: "acme", Collection: "holiday", Ext: ".mp4",
				Status: domain.StatusPending, Created: true, Deleted: true, Policy: domain.PlaybackPublic,
				Filename: "Clip.MP4", Details: domain.Details{Title: "Clip"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := given[domain.Video](t, videoID, tc.given...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("state = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestVideoExists(t *testing.T) {
	live := given[domain.Video](t, videoID, accepted)
	gone := given[domain.Video](t, videoID, accepted, domain.VideoDeleted{Account: "acme"})
	tests := []struct {
		name    string
		video   domain.Video
		account string
		want    bool
	}{
		{name: "owner sees a live video", video: live, account: "acme", want: true},
		{name: "another account does not", video: live, account: "other", want: false},
		{name: "deleted video is gone", video: gone, account: "acme", want: false},
		{name: "never created", video: domain.Video{}, account: "", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.video.Exists(tc.account); got != tc.want {
				t.Fatalf("Exists(%q) = %v; want %v", tc.account, got, tc.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want domain.Status
		err  domain.Kind
	}{
		{name: "pending", in: "PENDING", want: domain.StatusPending},
		{name: "processing", in: "PROCESSING", want: domain.StatusProcessing},
		{name: "completed", in: "COMPLETED", want: domain.StatusCompleted},
		{name: "failed", in: "FAILED", want: domain.StatusFailed},
		{name: "lower case", in: "pending", err: domain.Invalid},
		{name: "empty", in: "", err: domain.Invalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := domain.ParseStatus(tc.in)
			checkErr(t, "ParseStatus("+tc.in+")", err, tc.err)
			if got != tc.want {
				t.Fatalf("ParseStatus(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestVideoTranscodeDecide(t *testing.T) {
	started := func(n int) domain.Payload { return domain.TranscodeStarted{Account: "acme", Attempt: n, Worker: "w"} }
	playable := func(n int) domain.Payload {
		return domain.TranscodePlayable{Account: "acme", Attempt: n, Resolutions: []string{"360p", "240p"}}
	}
	failed := func(n int, final bool) domain.Payload {
		return domain.TranscodeFailed{Account: "acme", Attempt: n, Final: final, Reason: "ffmpeg was killed."}
	}
	crashed := func(n int) domain.Payload {
		return domain.TranscodeInterrupted{Account: "acme", Attempt: n, Reason: domain.InterruptCrash}
	}
	shutdown := func(n int) domain.Payload {
		return domain.TranscodeInterrupted{Account: "acme", Attempt: n, Reason: domain.InterruptShutdown}
	}
	outage := func(n int) domain.Payload {
		return domain.TranscodeInterrupted{Account: "acme", Attempt: n, Reason: domain.InterruptOutage}
	}
	done := domain.CompleteTranscode{Duration: 2, Width: 640, Height: 360, Resolutions: []string{"360p", "240p"}, ProcessedSize: 10}
	succeeded := domain.TranscodeSucceeded{Account: "acme", Attempt: 1, Duration: 2, Width: 640, Height: 360,
		Resolutions: []string{"360p", "240p"}, ProcessedSize: 10}
	deleted := domain.VideoDeleted{Account: "acme"}
	runDecide[domain.Video](t, videoID, []decideCase{
		{name: "first attempt", given: []domain.Payload{accepted}, when: domain.StartTranscode{Worker: "w", MaxAttempts: 3}, then: []domain.Payload{started(1)}},
		{name: "retry after a failed attempt", given: []domain.Payload{accepted, started(1), failed(1, false)},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 3}, then: []domain.Payload{started(2)}},
		{name: "redelivery after a crash records it and does not use up an attempt", given: []domain.Payload{accepted, started(1)},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 1, MaxCrashes: 5}, then: []domain.Payload{crashed(1), started(2)}},
		{name: "interruptions do not count as attempts", given: []domain.Payload{accepted, started(1), crashed(1), started(2), shutdown(2), started(3), crashed(3)},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 1, MaxCrashes: 3}, then: []domain.Payload{started(4)}},
		{name: "gives up after max failed attempts", given: []domain.Payload{accepted, started(1), failed(1, false), started(2), crashed(2), started(3), failed(3, false)},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 2, MaxCrashes: 5},
			then: []domain.Payload{domain.TranscodeFailed{Account: "acme", Attempt: 3, Final: true, Reason: "Processing failed 2 times; giving up."}}},
		{name: "gives up after max crashes", given: []domain.Payload{accepted, started(1), crashed(1), started(2)},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 3, MaxCrashes: 2},
			then: []domain.Payload{crashed(2), domain.TranscodeFailed{Account: "acme", Attempt: 2, Final: true, Reason: "Processing was interrupted 2 times; giving up."}}},
		{name: "shutdowns never give up", given: []domain.Payload{accepted, started(1), shutdown(1), started(2), shutdown(2), started(3), shutdown(3)},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 1, MaxCrashes: 1}, then: []domain.Payload{started(4)}},
		{name: "interrupt the running attempt", given: []domain.Payload{accepted, started(1)},
			when: domain.InterruptTranscode{Reason: domain.InterruptShutdown}, then: []domain.Payload{shutdown(1)}},
		{name: "interrupt by an outage of NATS", given: []domain.Payload{accepted, started(1)},
			when: domain.InterruptTranscode{Reason: domain.InterruptOutage}, then: []domain.Payload{outage(1)}},
		{name: "outages are neither failures nor crashes", given: []domain.Payload{accepted, started(1), outage(1), started(2), outage(2), started(3), outage(3)},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 1, MaxCrashes: 1}, then: []domain.Payload{started(4)}},
		{name: "interrupt with nothing running", given: []domain.Payload{accepted, started(1), failed(1, false)},
			when: domain.InterruptTranscode{Reason: domain.InterruptShutdown}},
		{name: "interrupt a completed video", given: []domain.Payload{accepted, started(1), succeeded},
			when: domain.InterruptTranscode{Reason: domain.InterruptShutdown}},
		{name: "interrupt for no known reason", given: []domain.Payload{accepted, started(1)},
			when: domain.InterruptTranscode{Reason: "bored"}, err: domain.Invalid},
		{name: "interrupt a deleted video", given: []domain.Payload{accepted, started(1), deleted},
			when: domain.InterruptTranscode{Reason: domain.InterruptShutdown}, err: domain.NotFound},
		{name: "start on a deleted video", given: []domain.Payload{accepted, deleted}, when: domain.StartTranscode{MaxAttempts: 3}, err: domain.NotFound},
		{name: "start on a completed video", given: []domain.Payload{accepted, started(1), succeeded}, when: domain.StartTranscode{MaxAttempts: 3}, err: domain.Conflict},
		{name: "start on a failed video", given: []domain.Payload{accepted, started(1), failed(1, true)}, when: domain.StartTranscode{MaxAttempts: 3}, err: domain.Conflict},
		{name: "start on nothing", when: domain.StartTranscode{MaxAttempts: 3}, err: domain.NotFound},
		{name: "complete", given: []domain.Payload{accepted, started(1)}, when: done, then: []domain.Payload{playable(1), succeeded}},
		{name: "complete when playable", given: []domain.Payload{accepted, started(1), playable(1)}, when: done, then: []domain.Payload{succeeded}},
		{name: "playable", given: []domain.Payload{accepted, started(1)}, when: domain.MarkPlayable{Resolutions: []string{"360p", "240p"}}, then: []domain.Payload{playable(1)}},
		{name: "playable twice", given: []domain.Payload{accepted, started(1), playable(1)}, when: domain.MarkPlayable{Resolutions: []string{"360p", "240p"}}},
		{name: "playable again after a crash", given: []domain.Payload{accepted, started(1), playable(1), domain.TranscodeInterrupted{Account: "acme", Attempt: 1, Reason: domain.InterruptCrash}, started(2)},
			when: domain.MarkPlayable{Resolutions: []string{"360p", "240p"}}, then: []domain.Payload{playable(2)}},
		{name: "playable while pending", given: []domain.Payload{accepted}, when: domain.MarkPlayable{Resolutions: []string{"360p"}}, err: domain.Conflict},
		{name: "playable without renditions", given: []domain.Payload{accepted, started(1)}, when: domain.MarkPlayable{}, err: domain.Invalid},
		{name: "retry a failed video", given: []domain.Payload{accepted, started(1), failed(1, true)}, when: domain.RetryTranscode{Account: "acme"},
			then: []domain.Payload{domain.TranscodeRetried{Account: "acme"}}},
		{name: "retry a completed video", given: []domain.Payload{accepted, started(1), succeeded}, when: domain.RetryTranscode{Account: "acme"}, err: domain.Conflict},
		{name: "retry another account's video", given: []domain.Payload{accepted, started(1), failed(1, true)}, when: domain.RetryTranscode{Account: "other"}, err: domain.NotFound},
		{name: "a retried video starts again with a fresh budget", given: []domain.Payload{accepted, started(1), failed(1, false), started(2), failed(2, true), domain.TranscodeRetried{Account: "acme"}},
			when: domain.StartTranscode{Worker: "w", MaxAttempts: 2}, then: []domain.Payload{started(3)}},
		{name: "sign a video", given: []domain.Payload{accepted}, when: domain.SetPlaybackPolicy{Account: "acme", Policy: domain.PlaybackSigned},
			then: []domain.Payload{domain.PlaybackPolicyChanged{Account: "acme", Policy: domain.PlaybackSigned}}},
		{name: "sign a signed video", given: []domain.Payload{accepted, domain.PlaybackPolicyChanged{Account: "acme", Policy: domain.PlaybackSigned}},
			when: domain.SetPlaybackPolicy{Account: "acme", Policy: domain.PlaybackSigned}},
		{name: "an unknown policy", given: []domain.Payload{accepted}, when: domain.SetPlaybackPolicy{Account: "acme", Policy: "secret"}, err: domain.Invalid},
		{name: "complete twice", given: []domain.Payload{accepted, started(1), succeeded}, when: done, err: domain.Conflict},
		{name: "complete while pending", given: []domain.Payload{accepted}, when: done, err: domain.Conflict},
		{name: "complete after delete", given: []domain.Payload{accepted, started(1), deleted}, when: done, err: domain.NotFound},
		{name: "complete without outputs", given: []domain.Payload{accepted, started(1)}, when: domain.CompleteTranscode{Duration: 2}, err: domain.Invalid},
		{name: "fail an attempt", given: []domain.Payload{accepted, started(1)}, when: domain.FailTranscode{Reason: "ffmpeg was killed."}, then: []domain.Payload{failed(1, false)}},
		{name: "fail finally", given: []domain.Payload{accepted, started(1)}, when: domain.FailTranscode{Reason: "ffmpeg was killed.", Final: true}, then: []domain.Payload{failed(1, true)}},
		{name: "fail without reason", given: []domain.Payload{accepted, started(1)}, when: domain.FailTranscode{Final: true}, err: domain.Invalid},
		{name: "fail after completion", given: []domain.Payload{accepted, started(1), succeeded}, when: domain.FailTranscode{Reason: "x"}, err: domain.Conflict},
		{name: "fail after delete", given: []domain.Payload{accepted, started(1), deleted}, when: domain.FailTranscode{Reason: "x"}, err: domain.NotFound},
	})
}

func TestVideoTranscodeStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		given []domain.Payload
		want  domain.Status
	}{
		{"started", []domain.Payload{accepted, domain.TranscodeStarted{Attempt: 1}}, domain.StatusProcessing},
		{"failed with a retry left", []domain.Payload{accepted, domain.TranscodeStarted{Attempt: 1}, domain.TranscodeFailed{Attempt: 1}}, domain.StatusProcessing},
		{"failed finally", []domain.Payload{accepted, domain.TranscodeStarted{Attempt: 1}, domain.TranscodeFailed{Attempt: 1, Final: true}}, domain.StatusFailed},
		{"succeeded", []domain.Payload{accepted, domain.TranscodeStarted{Attempt: 1}, domain.TranscodeSucceeded{Attempt: 1}}, domain.StatusCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := given[domain.Video](t, videoID, tc.given...); got.Status != tc.want {
				t.Fatalf("status %s, want %s", got.Status, tc.want)
			}
		})
	}
}
