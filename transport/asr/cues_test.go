package asr

import (
	"strings"
	"testing"
	"time"
)

func TestCues(t *testing.T) {
	words := strings.Fields
	tests := []struct {
		name  string
		utts  []utterance
		sound []span
		want  []Segment
	}{
		{
			name:  "each utterance is timed by the sound before its end",
			utts:  []utterance{{sec(4.2), words("the quick brown fox")}, {sec(8.4), words("jumped")}},
			sound: []span{{sec(0.7), sec(3.8)}, {sec(5.3), sec(7.9)}},
			want:  []Segment{{sec(0.7), sec(3.8), "the quick brown fox"}, {sec(5.3), sec(7.9), "jumped"}},
		},
		{
			name:  "sound over an utterance's end is cut there",
			utts:  []utterance{{sec(2), words("one")}, {sec(4), words("two")}},
			sound: []span{{sec(1), sec(3)}},
			want:  []Segment{{sec(1), sec(2), "one"}, {sec(2), sec(3), "two"}},
		},
		{
			name: "without pauses an utterance starts at most 0.6 s a word and a second before its end",
			utts: []utterance{{sec(30), words("hello world")}},
			want: []Segment{{sec(27.8), sec(30), "hello world"}},
		},
		{
			name: "an utterance of nothing recognized ends the time of the one before",
			utts: []utterance{{sec(1), nil}, {sec(2), words("yes")}},
			want: []Segment{{sec(1), sec(2), "yes"}},
		},
		{
			name:  "a long utterance is cut by characters into cues of two lines",
			utts:  []utterance{{sec(10), words("please call stella and ask her to bring these things with her from the store six spoons of fresh snow peas")}},
			sound: []span{{0, sec(9)}},
			want: []Segment{
				{0, sec(4.457943), "please call stella and ask\nher to bring these things"},
				{sec(4.457943), sec(9), "with her from the store six\nspoons of fresh snow peas"},
			},
		},
		{
			name:  "a slow utterance is cut into cues of at most 7 s",
			utts:  []utterance{{sec(16), words("aaa bbb ccc ddd")}},
			sound: []span{{sec(1), sec(15)}},
			want:  []Segment{{sec(1), sec(8), "aaa bbb"}, {sec(8), sec(15), "ccc ddd"}},
		},
		{
			name:  "a word said for longer than 7 s shows for 7 s",
			utts:  []utterance{{sec(12), words("hmm")}},
			sound: []span{{sec(1), sec(11)}},
			want:  []Segment{{sec(1), sec(8), "hmm"}},
		},
		{
			name:  "an utterance right after another, with no pause, starts at most 0.6 s a word and a second before its end",
			utts:  []utterance{{sec(2), words("one")}, {sec(9), words("two")}},
			sound: []span{{sec(1), sec(9)}},
			want:  []Segment{{sec(1), sec(2), "one"}, {sec(7.4), sec(9), "two"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cues(tt.utts, tt.sound)
			if len(got) != len(tt.want) {
				t.Fatalf("cues = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i].Text != tt.want[i].Text || (got[i].Start-tt.want[i].Start).Abs() > time.Millisecond || (got[i].End-tt.want[i].End).Abs() > time.Millisecond {
					t.Errorf("cue %d = %v-%v %q, want %v-%v %q", i, got[i].Start, got[i].End, got[i].Text, tt.want[i].Start, tt.want[i].End, tt.want[i].Text)
				}
			}
		})
	}
}

// TestSplitReadable: whatever the words and time, the cues are in order
// within the time given, every one fits two lines of maxLineLen and lasts
// at most maxCue, and no word is lost.
func TestSplitReadable(t *testing.T) {
	text := strings.Fields(strings.Repeat("the birch canoe slid on the smooth planks glue the sheet to the dark blue background ", 8))
	for n := 1; n <= len(text); n += 7 {
		for _, d := range []time.Duration{time.Second, 10 * time.Second, time.Minute} {
			segs := split(text[:n], sec(5), sec(5)+d)
			var got []string
			at := sec(5)
			for _, s := range segs {
				if s.Start < at || s.End <= s.Start || s.End-s.Start > maxCue {
					t.Fatalf("%d words over %v: cue %v-%v after %v", n, d, s.Start, s.End, at)
				}
				at = s.End
				ls := strings.Split(s.Text, "\n")
				if len(ls) > 2 {
					t.Fatalf("%d words over %v: %q", n, d, s.Text)
				}
				for _, l := range ls {
					if len(l) > maxLineLen {
						t.Fatalf("%d words over %v: line %q", n, d, l)
					}
					got = append(got, strings.Fields(l)...)
				}
			}
			if at > sec(5)+d || strings.Join(got, " ") != strings.Join(text[:n], " ") {
				t.Fatalf("%d words over %v: cues end at %v and hold %q", n, d, at, got)
			}
		}
	}
}
