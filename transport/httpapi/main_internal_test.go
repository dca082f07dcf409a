package httpapi

import (
	"os"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
)

func TestMain(m *testing.M) {
	// Each test runs on its own NATS server and API, and most of their
	// time is waiting (on writes, on timeouts, on outages they cause).
	eventstoretest.SetParallel(4)
	os.Exit(m.Run())
}
