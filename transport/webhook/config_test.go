package webhook

import (
	"strings"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
)

// The fan-out and the senders refuse to start without the event log or
// the queues they are handed, naming both.
func TestConfigNeedsStoreAndQueue(t *testing.T) {
	store := eventstoretest.Run(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{name: "both", cfg: Config{Store: store, Queue: queue.New(store)}, ok: true},
		{name: "no queue", cfg: Config{Store: store}},
		{name: "no store", cfg: Config{Queue: queue.New(store)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.CDNURL = testCDN
			_, err := NewFanout(tc.cfg)
			if tc.ok {
				if err != nil {
					t.Fatalf("NewFanout: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "store and queue are required") {
				t.Fatalf("NewFanout: %v, want store and queue are required", err)
			}
			tc.cfg.Secrets = testKey
			if _, err := NewDeliverer(tc.cfg); err == nil || !strings.Contains(err.Error(), "store and queue are required") {
				t.Fatalf("NewDeliverer: %v, want store and queue are required", err)
			}
		})
	}
}
