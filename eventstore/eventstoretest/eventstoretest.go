// Package eventstoretest starts a real embedded JetStream server for tests.
package eventstoretest

import (
	"context"
	"testing"

	"github.com/kino-video/kino/eventstore"
)

// Server starts an embedded JetStream server on a random port with its
// storage (and its generated credentials) in dir, and stops it when the
// test ends.
func Server(t testing.TB, dir string) *eventstore.Embedded {
	t.Helper()
	srv, err := eventstore.StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// Run starts a server in a temp dir and opens a store on it with kino
// serve's credentials.
func Run(t testing.TB) *eventstore.Store {
	t.Helper()
	srv := Server(t, t.TempDir())
	return Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
}

// Open opens a store (managing kino's streams, as kino serve does) on url
// with auth, and closes it when the test ends.
func Open(t testing.TB, url string, auth eventstore.Auth) *eventstore.Store {
	t.Helper()
	s, err := eventstore.Open(context.Background(), eventstore.Config{URL: url, Auth: auth, Name: t.Name(), Manage: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
