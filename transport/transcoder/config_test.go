package transcoder

import (
	"context"
	"strings"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/media"
)

// A transcoder refuses to start without any of the event log, the job
// queue, the media store or the progress bucket it is handed.
func TestConfigNeedsItsDependencies(t *testing.T) {
	t.Parallel()
	store := eventstoretest.Run(t)
	mediaStore, err := media.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	progress, err := kv.OpenProgress(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	full := Config{Store: store, Jobs: queue.New(store), Media: mediaStore, Progress: progress}
	if err := full.validate(); err != nil {
		t.Fatalf("validate with every dependency: %v", err)
	}
	for _, tc := range []struct {
		name string
		drop func(*Config)
	}{
		{name: "no store", drop: func(c *Config) { c.Store = nil }},
		{name: "no jobs", drop: func(c *Config) { c.Jobs = nil }},
		{name: "no media", drop: func(c *Config) { c.Media = nil }},
		{name: "no progress", drop: func(c *Config) { c.Progress = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Store: store, Jobs: queue.New(store), Media: mediaStore, Progress: progress}
			tc.drop(&cfg)
			err := cfg.validate()
			if err == nil || !strings.Contains(err.Error(), "store, jobs, media and progress are required") {
				t.Fatalf("validate: %v, want store, jobs, media and progress are required", err)
			}
		})
	}
}
