package adminrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kino-video/kino/eventstore/adminrpc"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// A call with no kino serve on the NATS fails with ErrNoAdmin at once.
func TestCallAdminWithoutAServer(t *testing.T) {
	s := eventstoretest.Run(t)
	_, err := adminrpc.Call(context.Background(), s, "replay", map[string]bool{}, func(json.RawMessage) {})
	if !errors.Is(err, adminrpc.ErrNoAdmin) {
		t.Fatalf("got %v, want ErrNoAdmin", err)
	}
}
