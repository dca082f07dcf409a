package httpapi

import (
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// Each test runs on its own NATS server and API, and most of their time is
// waiting (on writes, on timeouts, on outages they cause).
func TestMain(m *testing.M) { eventstoretest.Main(m, 4) }
