package natsserver

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestStartFailsAtOnceWhenItsListenFails: an address taken after
// checkFree (another kino starting at the same instant) ends the wait for
// readiness with errListenInUse, instead of errNotReady 30 s later.
func TestStartFailsAtOnceWhenItsListenFails(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	e := &Embedded{opts: &server.Options{Host: "127.0.0.1", Port: port, JetStream: true,
		StoreDir: filepath.Join(t.TempDir(), "nats"), NoSigs: true, NoLog: true}}
	srv, err := e.start()
	if err == nil {
		srv.Shutdown()
		t.Fatal("started on an address in use")
	}
	if !errors.Is(err, errListenInUse) || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("error %q: want errListenInUse naming %s", err, busy.Addr())
	}
}
