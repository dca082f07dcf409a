package asr_test

import (
	"context"
	"testing"
	"time"

	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/asr/asrtest"
)

// harvard is the first list of the Harvard sentences (IEEE, 1969), made
// to be phonetically balanced: a harder corpus than asrtest.Sentences.
var harvard = []string{
	"the birch canoe slid on the smooth planks",
	"glue the sheet to the dark blue background",
	"it's easy to tell the depth of a well",
	"these days a chicken leg is a rare dish",
	"rice is often served in round bowls",
	"the juice of lemons makes fine punch",
	"the box was thrown beside the parked truck",
	"the hogs were fed chopped corn and garbage",
	"four hours of steady work faced us",
	"a large size in stockings is hard to sell",
}

// BenchmarkPocketsphinx transcribes the Harvard sentences said by
// Festival, with a second between two (pause) and with a fifth of one
// (run-on), and reports the word error rate, the words recognized and
// the seconds of media per second of work.
func BenchmarkPocketsphinx(b *testing.B) {
	e := pocketsphinx(b, asr.PocketsphinxConfig{ScratchDir: b.TempDir()})
	for _, c := range []struct {
		name string
		gap  time.Duration
	}{{"pause", time.Second}, {"run-on", 200 * time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) {
			corpus := asrtest.Speech(b, b.TempDir(), "harvard.mp4", harvard, 500*time.Millisecond, c.gap)
			media := corpus.Spoken[len(corpus.Spoken)-1].End + 500*time.Millisecond
			var score asrtest.Score
			b.ResetTimer()
			for b.Loop() {
				segs, err := e.Transcribe(context.Background(), corpus.Path, "en")
				if err != nil {
					b.Fatal(err)
				}
				score = asrtest.Grade(corpus, segs)
			}
			b.ReportMetric(score.WER, "WER")
			b.ReportMetric(float64(score.Recognized)/float64(score.Words), "recall")
			b.ReportMetric(media.Seconds()*float64(b.N)/b.Elapsed().Seconds(), "x-realtime")
			b.Logf("%s", score)
		})
	}
}
