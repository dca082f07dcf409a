// Package eventstoretest starts a real embedded JetStream server for tests.
package eventstoretest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/nats-io/nats.go"
)

// Server starts an embedded JetStream server on a random port with its
// storage (and its generated credentials) in dir, and stops it when the
// test ends.
func Server(t testing.TB, dir string) *natsserver.Embedded {
	t.Helper()
	srv, err := natsserver.StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// Restart stops srv (started by Server on dir) and starts it again on the
// same port and store, as an operator's restart of nats-server does:
// clients reconnect by themselves; streams and buckets kept in memory are
// gone.
func Restart(t testing.TB, srv *natsserver.Embedded, dir string) *natsserver.Embedded {
	t.Helper()
	addr := strings.TrimPrefix(srv.URL(), "nats://")
	srv.Shutdown()
	again, err := natsserver.StartEmbedded(dir, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Shutdown)
	return again
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

// Cluster is n embedded servers on loopback forming one NATS cluster, as
// an operator sets one up: kino cluster init's credentials copied to
// every node, the same route list on each.
type Cluster struct {
	t      testing.TB
	Dirs   []string // each node's data directory
	Addrs  []string // each node's cluster (route) address
	Routes []string
	Nodes  []*natsserver.Embedded // the running server of each node
}

// StartCluster starts n nodes and stops them when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for i := range n {
		c.Dirs = append(c.Dirs, t.TempDir())
		if i == 0 {
			if err := natsserver.InitCluster(c.Dirs[0]); err != nil {
				t.Fatal(err)
			}
		} else if err := os.CopyFS(filepath.Join(c.Dirs[i], natsserver.CredsDir), os.DirFS(filepath.Join(c.Dirs[0], natsserver.CredsDir))); err != nil {
			t.Fatal(err)
		}
	}
	// The cluster ports are picked free, then bound by the nodes: another
	// process may take one in between (a CI run met it). Then every node
	// starts again on new ports, since each names all routes.
	for attempt := 1; ; attempt++ {
		c.Addrs, c.Routes = nil, nil
		for range n {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			c.Addrs = append(c.Addrs, l.Addr().String())
			c.Routes = append(c.Routes, "nats://"+l.Addr().String())
			l.Close()
		}
		c.Nodes = make([]*natsserver.Embedded, n)
		var err error
		for i := range n {
			if c.Nodes[i], err = c.start(i); err != nil {
				break
			}
		}
		if err == nil {
			for _, e := range c.Nodes {
				t.Cleanup(e.Shutdown)
			}
			return c
		}
		for _, e := range c.Nodes {
			if e != nil {
				e.Shutdown()
			}
		}
		if !errors.Is(err, natsserver.ErrAddressInUse) || attempt == 5 {
			t.Fatal(err)
		}
	}
}

// Start starts node i (again, after a Shutdown) on its directory and
// cluster address.
func (c *Cluster) Start(i int) *natsserver.Embedded {
	c.t.Helper()
	e, err := c.start(i)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(e.Shutdown)
	c.Nodes[i] = e
	return e
}

func (c *Cluster) start(i int) (*natsserver.Embedded, error) {
	return natsserver.StartNode(c.Dirs[i], "127.0.0.1:0", &natsserver.Cluster{Listen: c.Addrs[i], Routes: c.Routes, Name: fmt.Sprintf("n%d", i)})
}

// Open opens a store managing kino's streams at replicas on node i, with
// kino serve's credentials, waiting for the cluster's JetStream.
func (c *Cluster) Open(i, replicas int, configure ...func(*eventstore.Config)) *eventstore.Store {
	c.t.Helper()
	e := c.Nodes[i]
	cfg := eventstore.Config{URL: e.URL(), Auth: e.Auth(eventstore.RoleServe), Name: c.t.Name(), Manage: true, Replicas: replicas, ReadyWait: time.Minute,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range configure {
		f(&cfg)
	}
	s, err := eventstore.Open(context.Background(), cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = s.Close() })
	return s
}

// Seed is the connection option presenting role's nkey to srv, for tests
// that connect with nats.go directly (to check what a role may do); a
// worker's takes its replies on eventstore.WorkerInbox, as kino's own
// worker connections do.
func Seed(t testing.TB, srv *natsserver.Embedded, role string) nats.Option {
	t.Helper()
	o, err := nats.NkeyOptionFromSeed(srv.Auth(role).CredsFile)
	if err != nil {
		t.Fatal(err)
	}
	if role != eventstore.RoleWorker {
		return o
	}
	return func(opts *nats.Options) error {
		if err := o(opts); err != nil {
			return err
		}
		return nats.CustomInboxPrefix(eventstore.WorkerInbox)(opts)
	}
}

// WaitViolation waits (5 s at most) for the server's permission violation
// on subject among violations (what a connection's error handler got).
func WaitViolation(t testing.TB, violations <-chan error, subject string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case err := <-violations:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
				return
			}
		case <-deadline:
			t.Fatalf("no permission violation for %s", subject)
		}
	}
}
