package transcoder_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/transcoder"
)

// mastersSeen is a media store that notes every master playlist published
// while a video processes, as it was when published.
type mastersSeen struct {
	transcoder.Media
	mu        sync.Mutex
	seen      []string
	published func() // after each master is published
}

func (m *mastersSeen) PublishFiles(ctx context.Context, id, dir string, rels []string) error {
	if slices.Contains(rels, "hls/master.m3u8") {
		data, err := os.ReadFile(filepath.Join(dir, "hls", "master.m3u8"))
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.seen = append(m.seen, string(data))
		m.mu.Unlock()
	}
	if err := m.Media.PublishFiles(ctx, id, dir, rels); err != nil {
		return err
	}
	if slices.Contains(rels, "hls/master.m3u8") && m.published != nil {
		m.published()
	}
	return nil
}

// TestProgressiveLanes: a ladder split into lanes plays first at the low
// lane's rungs (the first master lists only them and the audio, and
// TranscodePlayable names them), then at every rung (the merged master,
// published while processing once the high lane is safe to start from
// too), and ends with the one master a single process writes, with
// nothing of the high lane's own master or spare audio left.
func TestProgressiveLanes(t *testing.T) {
	t.Parallel()
	rec := &mastersSeen{}
	// The merge waits until a master was published: the first pass that
	// finds the low lane's first segments comes before it, whatever the
	// two lanes' speeds.
	firstSeen := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(firstSeen) }) }
	rec.published = release
	e := newEnv(t, func(c *transcoder.Config) {
		c.Lanes = transcoder.LanesTwo // 360p | 240p: the clips a test can afford are too light for auto
		rec.Media, c.Media = c.Media, rec
		transcoder.SetMergeHook(c, func(string) { <-firstSeen })
	})
	t.Cleanup(release) // before the env's: a failure must not leave the job held
	acc := e.account("acme", domain.PlanFree)
	id := e.uploadFile(acc, "clip.mp4", ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 640, 360, 10, true))
	// The high lane runs niced (ffmpeg.HighLaneNice): beside the whole test
	// suite it gets a small share of two cores and takes up to two minutes.
	if o := e.wait(id, 5*time.Minute); o.status != domain.StatusCompleted {
		t.Fatalf("ended %s: %s", o.status, o.reason)
	}

	lists := func(master string) []string {
		var out []string
		for _, r := range []string{"360p", "240p", "audio", "audio.high"} {
			if strings.Contains(master, r+"/index.m3u8") {
				out = append(out, r)
			}
		}
		return out
	}
	rec.mu.Lock()
	seen := rec.seen
	rec.mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("masters published while processing: %q, want the low lane's then every rung", seen)
	}
	if got := lists(seen[0]); strings.Join(got, ",") != "240p,audio" {
		t.Fatalf("first master lists %v, want the low lane's 240p and the audio:\n%s", got, seen[0])
	}
	final := e.read(id, "hls/master.m3u8")
	if got := lists(final); strings.Join(got, ",") != "360p,240p,audio" {
		t.Fatalf("final master lists %v:\n%s", got, final)
	}
	if strings.Index(final, "360p/") > strings.Index(final, "240p/") {
		t.Fatalf("final master does not list the rungs highest first:\n%s", final)
	}
	// The final master differs only by the rates measured at the end.
	if last := seen[len(seen)-1]; !slices.Equal(lists(last), lists(final)) {
		t.Fatalf("the last master published while processing:\n%s\nlists other renditions than the final one:\n%s", last, final)
	}
	for _, o := range e.outputs(id) {
		if strings.Contains(o, ".high") {
			t.Fatalf("the high lane's %s was published", o)
		}
	}

	events, _, err := e.store.Load(context.Background(), stream(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type != domain.TypeTranscodePlayable {
			continue
		}
		p, _ := ev.Data.(domain.TranscodePlayable)
		if strings.Join(p.Resolutions, ",") != "240p" {
			t.Fatalf("TranscodePlayable names %v, want the low lane's 240p", p.Resolutions)
		}
	}
	if left := e.workDirs(); len(left) != 0 {
		t.Fatalf("work directories left: %v", left)
	}
}
