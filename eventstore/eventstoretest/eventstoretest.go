// Package eventstoretest starts a real embedded JetStream server for tests.
package eventstoretest

import (
	"context"
	"testing"

	"github.com/kino-video/kino/eventstore"
)

// Server starts an embedded JetStream server on a random port with its
// storage in dir, and stops it when the test ends.
func Server(t testing.TB, dir string) *eventstore.Embedded {
	t.Helper()
	srv, err := eventstore.StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// Run starts a server in a temp dir and opens a store on it.
func Run(t testing.TB) *eventstore.Store {
	t.Helper()
	return Open(t, Server(t, t.TempDir()).URL())
}

// Open opens a store on url and closes it when the test ends.
func Open(t testing.TB, url string) *eventstore.Store {
	t.Helper()
	s, err := eventstore.Open(context.Background(), eventstore.Config{URL: url, Name: t.Name(), Manage: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
