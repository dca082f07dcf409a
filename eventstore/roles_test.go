package eventstore_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/natsserver"
)

// seed and waitViolation are eventstoretest's Seed and WaitViolation,
// under the names the object reader's tests use.
func seed(t *testing.T, srv *natsserver.Embedded, role string) nats.Option {
	return eventstoretest.Seed(t, srv, role)
}

func waitViolation(t *testing.T, violations <-chan error, subject string) {
	t.Helper()
	eventstoretest.WaitViolation(t, violations, subject)
}
