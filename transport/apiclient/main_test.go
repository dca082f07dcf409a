package apiclient_test

import (
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// Each test runs on its own kino, and most of its time is waiting for
// transcodes and the client's polls.
func TestMain(m *testing.M) { eventstoretest.Main(m, 4) }
