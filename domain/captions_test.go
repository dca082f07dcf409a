package domain_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

const (
	trackA = "01JTRACK00000000000000000A"
	trackB = "01JTRACK00000000000000000B"
	vtt    = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHello\n"
)

func addTrack(mod func(*domain.AddCaptionTrack)) domain.AddCaptionTrack {
	c := domain.AddCaptionTrack{Account: "acme", Track: trackA, Language: "en", Label: "English", VTT: vtt, Cues: 1}
	if mod != nil {
		mod(&c)
	}
	return c
}

var (
	englishAdded = domain.CaptionTrackAdded{Account: "acme", Track: trackA, Language: "en", Label: "English", VTT: vtt, Cues: 1}
	generating   = domain.CaptionTrackRequested{Account: "acme", Track: trackB, Language: "en", Label: "English (generated)"}
)

func TestCaptionsDecide(t *testing.T) {
	var many []domain.Payload
	many = append(many, accepted)
	for i := range domain.MaxCaptionTracks {
		e := englishAdded
		e.Track, e.Label = fmt.Sprintf("01JTRACK%018d", i), fmt.Sprintf("Track %d", i)
		many = append(many, e)
	}
	runDecide[domain.Video](t, videoID, []decideCase{
		{name: "an uploaded track is ready at once", given: []domain.Payload{accepted}, when: addTrack(nil),
			then: []domain.Payload{englishAdded}},
		{name: "a track of another account's video", given: []domain.Payload{accepted},
			when: addTrack(func(c *domain.AddCaptionTrack) { c.Account = "other" }), err: domain.NotFound},
		{name: "a track of a deleted video", given: []domain.Payload{accepted, domain.VideoDeleted{Account: "acme"}},
			when: addTrack(nil), err: domain.NotFound},
		{name: "a language that is no tag", given: []domain.Payload{accepted},
			when: addTrack(func(c *domain.AddCaptionTrack) { c.Language = "english please" }), err: domain.Invalid},
		{name: "a label with a bidi override", given: []domain.Payload{accepted},
			when: addTrack(func(c *domain.AddCaptionTrack) { c.Label = "Eng\u202elish" }), err: domain.Invalid},
		{name: "a label too long", given: []domain.Payload{accepted},
			when: addTrack(func(c *domain.AddCaptionTrack) { c.Label = strings.Repeat("é", domain.MaxCaptionLabelLen+1) }), err: domain.Invalid},
		{name: "a label already used, in another case", given: []domain.Payload{accepted, englishAdded},
			when: addTrack(func(c *domain.AddCaptionTrack) { c.Track, c.Label = trackB, "ENGLISH" }), err: domain.Conflict},
		{name: "one track too many", given: many,
			when: addTrack(func(c *domain.AddCaptionTrack) { c.Track, c.Label = trackB, "One more" }), err: domain.Conflict},
		{name: "no cues", given: []domain.Payload{accepted},
			when: addTrack(func(c *domain.AddCaptionTrack) { c.Cues = 0 }), err: domain.Invalid},
		{name: "too large once stored: every < costs six bytes", given: []domain.Payload{accepted},
			when: addTrack(func(c *domain.AddCaptionTrack) {
				c.VTT = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n" + strings.Repeat("<i>", domain.MaxCaptionSize/12)
			}), err: domain.TooLarge},
		{name: "generation starts a pending track", given: []domain.Payload{accepted},
			when: domain.AddCaptionTrack{Account: "acme", Track: trackB, Language: "en", Label: "English (generated)", Generate: true},
			then: []domain.Payload{generating}},
		{name: "generation already running in that language", given: []domain.Payload{accepted, generating},
			when: domain.AddCaptionTrack{Account: "acme", Track: trackA, Language: "en", Label: "Another", Generate: true}, err: domain.Conflict},
		{name: "a generated track finishes", given: []domain.Payload{accepted, generating},
			when: domain.FinishCaptionTrack{Track: trackB, VTT: vtt, Cues: 1},
			then: []domain.Payload{domain.CaptionTrackReady{Account: "acme", Track: trackB, VTT: vtt, Cues: 1}}},
		{name: "a finished track finishes again (a redelivered job): nothing",
			given: []domain.Payload{accepted, generating, domain.CaptionTrackReady{Account: "acme", Track: trackB, VTT: vtt, Cues: 1}},
			when:  domain.FinishCaptionTrack{Track: trackB, VTT: vtt, Cues: 1}},
		{name: "a removed track's job ends: nothing",
			given: []domain.Payload{accepted, generating, domain.CaptionTrackRemoved{Account: "acme", Track: trackB}},
			when:  domain.FailCaptionTrack{Track: trackB, Reason: "no speech"}},
		{name: "a deleted video's job ends: nothing",
			given: []domain.Payload{accepted, generating, domain.VideoDeleted{Account: "acme"}},
			when:  domain.FinishCaptionTrack{Track: trackB, VTT: vtt, Cues: 1}},
		{name: "a generated track fails", given: []domain.Payload{accepted, generating},
			when: domain.FailCaptionTrack{Track: trackB, Reason: " The video has no audio. "},
			then: []domain.Payload{domain.CaptionTrackFailed{Account: "acme", Track: trackB, Reason: "The video has no audio."}}},
		{name: "a track removed", given: []domain.Payload{accepted, englishAdded},
			when: domain.RemoveCaptionTrack{Account: "acme", Track: trackA},
			then: []domain.Payload{domain.CaptionTrackRemoved{Account: "acme", Track: trackA}}},
		{name: "a track removed twice", given: []domain.Payload{accepted, englishAdded, domain.CaptionTrackRemoved{Account: "acme", Track: trackA}},
			when: domain.RemoveCaptionTrack{Account: "acme", Track: trackA}, err: domain.NotFound},
		{name: "another account removes a track", given: []domain.Payload{accepted, englishAdded},
			when: domain.RemoveCaptionTrack{Account: "other", Track: trackA}, err: domain.NotFound},
	})
}

func TestCaptionsEvolveKeepsOneDefault(t *testing.T) {
	first := englishAdded
	first.Default = true
	second := domain.CaptionTrackRequested{Account: "acme", Track: trackB, Language: "fr", Label: "Français", Default: true}
	v := given[domain.Video](t, videoID, accepted, first, second)
	if len(v.Captions) != 2 || v.Captions[0].Default || !v.Captions[1].Default {
		t.Fatalf("tracks = %+v; want the second the only default", v.Captions)
	}
	v = given[domain.Video](t, videoID, accepted, first, second, domain.CaptionTrackRemoved{Account: "acme", Track: trackB})
	if len(v.Captions) != 1 || v.Captions[0].ID != trackA || v.Captions[0].Default {
		t.Fatalf("tracks after removal = %+v; want the first, not default", v.Captions)
	}
}

func TestStoredCaptionSize(t *testing.T) {
	for _, s := range []string{"", "WEBVTT\n", "a<b>&\"\\\t\x01é"} {
		raw, err := domain.Encode(domain.Event{ID: "01JFIXTURE0000000000000001", AggregateID: videoID,
			Data: domain.CaptionTrackReady{VTT: s}})
		if err != nil {
			t.Fatal(err)
		}
		empty, _ := domain.Encode(domain.Event{ID: "01JFIXTURE0000000000000001", AggregateID: videoID,
			Data: domain.CaptionTrackReady{}})
		if got, want := domain.StoredCaptionSize(s), len(raw)-len(empty); got != want {
			t.Errorf("StoredCaptionSize(%q) = %d; the event grows by %d", s, got, want)
		}
	}
}

func TestThumbnailDecide(t *testing.T) {
	at := func(f float64) *float64 { return &f }
	started := domain.TranscodeStarted{Account: "acme", Attempt: 1, Worker: "w"}
	done := domain.TranscodeSucceeded{Account: "acme", Attempt: 1, Duration: 10, Resolutions: []string{"180p"}, ProcessedSize: 1}
	asked := domain.ThumbnailRequested{Account: "acme", At: 4}
	complete := domain.CompleteTranscode{Duration: 10, Resolutions: []string{"180p"}, ProcessedSize: 1}
	runDecide[domain.Video](t, videoID, []decideCase{
		{name: "asked at upload", when: upload(func(c *domain.AcceptUpload) { c.ThumbnailTime = at(2.5) }),
			then: []domain.Payload{func() domain.UploadAccepted { a := accepted; a.ThumbnailTime = at(2.5); return a }()}},
		{name: "a negative time at upload", when: upload(func(c *domain.AcceptUpload) { c.ThumbnailTime = at(-1) }), err: domain.Invalid},
		{name: "asked by PATCH", given: []domain.Payload{accepted, started, done},
			when: domain.UpdateVideo{Account: "acme", ThumbnailTime: at(4)}, then: []domain.Payload{asked}},
		{name: "asked again for the same moment: nothing", given: []domain.Payload{accepted, started, done, asked},
			when: domain.UpdateVideo{Account: "acme", ThumbnailTime: at(4)}},
		{name: "past a day", given: []domain.Payload{accepted},
			when: domain.UpdateVideo{Account: "acme", ThumbnailTime: at(domain.MaxThumbnailTime + 1)}, err: domain.Invalid},
		{name: "of a FAILED video", given: []domain.Payload{accepted, domain.TranscodeFailed{Account: "acme", Final: true, Reason: "x"}},
			when: domain.UpdateVideo{Account: "acme", ThumbnailTime: at(1)}, err: domain.Conflict},
		{name: "asked while the attempt made its stills: asked again when it completes",
			given: []domain.Payload{accepted, started, asked}, when: complete,
			then: []domain.Payload{domain.TranscodePlayable{Account: "acme", Attempt: 1, Resolutions: []string{"180p"}},
				domain.TranscodeSucceeded{Account: "acme", Attempt: 1, Duration: 10, Resolutions: []string{"180p"}, ProcessedSize: 1}, asked}},
		{name: "the job's thumbnail", given: []domain.Payload{accepted, started, done, asked},
			when: domain.ChangeThumbnail{At: 4, Animated: true}, then: []domain.Payload{domain.ThumbnailChanged{Account: "acme", At: 4, Animated: true}}},
		{name: "a job superseded by a later request: nothing", given: []domain.Payload{accepted, started, done, asked, domain.ThumbnailRequested{Account: "acme", At: 7}},
			when: domain.ChangeThumbnail{At: 4}},
		{name: "a job of a deleted video: nothing", given: []domain.Payload{accepted, started, done, asked, domain.VideoDeleted{Account: "acme"}},
			when: domain.ChangeThumbnail{At: 4}},
	})
}
