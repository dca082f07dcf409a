package projections_test

import (
	"bytes"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// A video's tracks: the record lists them (one default at most), their
// cues are kept beside it, and a removal or the video's deletion leaves
// no cues behind; a rebuild from the stream writes the same file.
func TestCaptionTracks(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	p, _ := running(t, db, s)
	id, _ := upload(t, s, "acme", "c")
	video := domain.StreamID{Aggregate: domain.AggVideo, ID: id}
	const vtt = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHello\n"
	a, b, g := s.NewID(), s.NewID(), s.NewID()
	exec[domain.Video](t, s, video, domain.AddCaptionTrack{Account: "acme", Track: a, Language: "en", Label: "English", Default: true, VTT: vtt, Cues: 1})
	exec[domain.Video](t, s, video, domain.AddCaptionTrack{Account: "acme", Track: b, Language: "fr", Label: "Français", Default: true, VTT: vtt, Cues: 1})
	exec[domain.Video](t, s, video, domain.AddCaptionTrack{Account: "acme", Track: g, Language: "en", Label: "English (generated)", Generate: true})
	seq := exec[domain.Video](t, s, video, domain.RemoveCaptionTrack{Account: "acme", Track: a})
	waitFor(t, p, seq)

	v, _, err := db.Video(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Captions) != 2 || v.Captions[0].ID != b || !v.Captions[0].Default || v.Captions[1].Status != domain.CaptionPending {
		t.Fatalf("tracks = %+v; want fr (default), then the pending generated one", v.Captions)
	}
	if _, ok, _ := db.CaptionVTT(id, a); ok {
		t.Error("a removed track's cues are still kept")
	}
	if got, ok, _ := db.CaptionVTT(id, b); !ok || string(got) != vtt {
		t.Errorf("fr cues = %q, %v", got, ok)
	}
	if _, ok, _ := db.CaptionVTT(id, g); ok {
		t.Error("a pending track has cues")
	}
	seq = exec[domain.Video](t, s, video, domain.FinishCaptionTrack{Track: g, VTT: vtt, Cues: 1})
	waitFor(t, p, seq)
	if v, _, _ = db.Video(id); v.Captions[1].Status != domain.CaptionReady || v.Captions[1].Cues != 1 {
		t.Fatalf("generated track = %+v; want READY with 1 cue", v.Captions[1])
	}

	fresh := tempDB(t)
	if err := applyAll(fresh, s); err != nil {
		t.Fatal(err)
	}
	var live, rebuilt bytes.Buffer
	if err := db.Dump(&live); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Dump(&rebuilt); err != nil {
		t.Fatal(err)
	}
	if live.String() != rebuilt.String() {
		t.Errorf("a rebuild differs from the live read models:\n%s\n---\n%s", live.String(), rebuilt.String())
	}

	seq = exec[domain.Video](t, s, video, domain.DeleteVideo{Account: "acme"})
	waitFor(t, p, seq)
	for _, track := range []string{b, g} {
		if _, ok, _ := db.CaptionVTT(id, track); ok {
			t.Errorf("a deleted video's track %s keeps its cues", track)
		}
	}
}
