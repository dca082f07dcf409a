package queue

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// A work loop that fails to fetch many times in a row (a cluster without
// quorum) logs the outage once, and once more when fetching works again.
func TestFetchLogOncePerOutage(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var f fetchLog
	f.ok(log, "fetch job")
	for range 50 {
		f.failed(log, "fetch job", "err", errors.New("nats: no responders available for request"))
	}
	f.ok(log, "fetch job")
	f.ok(log, "fetch job")
	f.failed(log, "fetch job", "err", errors.New("again"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[1], "works again") || !strings.Contains(lines[2], "again") {
		t.Fatalf("log:\n%s\nwant a warning, a recovery, a warning", buf.String())
	}
}
