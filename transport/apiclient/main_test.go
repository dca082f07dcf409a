package apiclient_test

import (
	"os"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
)

func TestMain(m *testing.M) {
	// Each test runs on its own kino, and most of its time is waiting for
	// transcodes and the client's polls.
	eventstoretest.SetParallel(4)
	os.Exit(m.Run())
}
