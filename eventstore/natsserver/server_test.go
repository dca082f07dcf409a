package natsserver_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/kino-video/kino/eventstore/natsserver"
)

// TestStartEmbeddedOnABusyAddress: a listen address another process holds
// is refused at once with ErrAddressInUse, not after the server's 30 s
// readiness wait.
func TestStartEmbeddedOnABusyAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	srv, err := natsserver.StartEmbedded(t.TempDir(), busy.Addr().String())
	if err == nil {
		srv.Shutdown()
		t.Fatal("started on an address in use")
	}
	if !errors.Is(err, natsserver.ErrAddressInUse) || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("error %q: want ErrAddressInUse naming %s", err, busy.Addr())
	}
}
