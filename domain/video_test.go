package domain_test

import (
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
}

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
				Filename: "Clip.MP4", OriginalSize: 10 * domain.MiB, Ext: ".mp4",
			}},
		},
		{
			name: "filename of 255 multi-byte characters",
			when: upload(func(c *domain.AcceptUpload) { c.Filename = name255 }),
			then: []domain.Payload{domain.UploadAccepted{
				Account: "acme", Collection: "holiday", CollectionName: "Holiday 2026",
				Filename: name255, OriginalSize: 1234, Ext: ".mp4",
			}},
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
				ID: videoID, Account: "acme", Collection: "holiday",
				Status: domain.StatusPending, Created: true,
			},
		},
		{
			name:  "deleted",
			given: []domain.Payload{accepted, domain.VideoDeleted{Account: "acme"}},
			want: domain.Video{
				ID: videoID, Account: "acme", Collection: "holiday",
				Status: domain.StatusPending, Created: true, Deleted: true,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := given[domain.Video](t, videoID, tc.given...)
			if got != tc.want {
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
