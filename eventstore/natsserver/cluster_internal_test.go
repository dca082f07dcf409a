package natsserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest/tlstest"
)

// copyCreds gives dst the cluster credentials of src, as an operator
// copies kino cluster init's output to every node.
func copyCreds(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dst, CredsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(src, CredsDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, CredsDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, CredsDir, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func startNode(t *testing.T, dir, listen string, routes ...string) *Embedded {
	t.Helper()
	e, err := StartNode(dir, "127.0.0.1:0", &Cluster{Listen: listen, Routes: routes, Name: "n-" + filepath.Base(dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

// errorLog keeps what a server logs at error level.
type errorLog chan string

func (l errorLog) Noticef(string, ...any) {}
func (l errorLog) Warnf(string, ...any)   {}
func (l errorLog) Fatalf(string, ...any)  {}
func (l errorLog) Debugf(string, ...any)  {}
func (l errorLog) Tracef(string, ...any)  {}
func (l errorLog) Errorf(format string, v ...any) {
	select {
	case l <- fmt.Sprintf(format, v...):
	default:
	}
}

// Three nodes sharing kino cluster init's credentials form a cluster whose
// event stream has three replicas, written on one node and read on
// another; a node with another secret is refused by the routes.
func TestClusterOfThreeEmbeddedNodes(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	if err := InitCluster(dirs[0]); err != nil {
		t.Fatal(err)
	}
	copyCreds(t, dirs[0], dirs[1])
	copyCreds(t, dirs[0], dirs[2])
	// Every node gets the same routes, itself included, as an operator
	// would write them.
	addrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	routes := []string{"nats://" + addrs[0], "nats://" + addrs[1], addrs[2]}
	a := startNode(t, dirs[0], addrs[0], routes...)
	b := startNode(t, dirs[1], addrs[1], routes...)
	c := startNode(t, dirs[2], addrs[2], routes...)
	route := "nats://" + a.ClusterAddr()

	ctx := context.Background()
	open := func(e *Embedded, manage bool) *eventstore.Store {
		s, err := eventstore.Open(ctx, eventstore.Config{URL: e.URL(), Auth: e.Auth(eventstore.RoleServe), Manage: manage, Replicas: 3, ReadyWait: time.Minute, Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	sa := open(a, true)
	leader, replicas, err := sa.StreamLeader(ctx)
	if err != nil || leader == "" || len(replicas) != 3 {
		t.Fatalf("stream leader %q, replicas %q, %v; want a leader and 3", leader, replicas, err)
	}
	id := domain.StreamID{Aggregate: domain.AggAccount, ID: "acme"}
	if _, err := sa.Append(ctx, id, 0, []domain.Payload{domain.AccountCreated{Plan: domain.PlanFree}}); err != nil {
		t.Fatal(err)
	}
	sc := open(c, false)
	if last, err := sc.LastSeq(ctx); err != nil || last != 1 {
		t.Fatalf("last seq on node c: %d, %v", last, err)
	}
	if b.Peers() != 2 {
		t.Fatalf("node b has routes to %d nodes, want 2", b.Peers())
	}

	// A stranger with its own secret (and nkeys) routes to a: refused.
	refused := make(errorLog, 16)
	a.srv.SetLogger(refused, false, false)
	stranger := t.TempDir()
	if err := InitCluster(stranger); err != nil {
		t.Fatal(err)
	}
	d := startNode(t, stranger, freeAddr(t), route)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case msg := <-refused:
			if !strings.Contains(strings.ToLower(msg), "authoriz") && !strings.Contains(strings.ToLower(msg), "authentic") {
				continue
			}
			// The stranger may count its route for a moment before a's
			// refusal reaches it: it must drop it, and a keep its two.
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for d.Peers() != 0 || a.Peers() != 2 {
				select {
				case <-tick.C:
				case <-deadline:
					t.Fatalf("stranger has %d peers, a %d", d.Peers(), a.Peers())
				}
			}
			return
		case <-deadline:
			t.Fatal("the stranger's route was not refused")
		}
	}
}

// A clustered node refuses to start without the shared credentials,
// rather than make its own that no other node knows.
func TestClusterNodeNeedsSharedCredentials(t *testing.T) {
	dir := t.TempDir()
	_, err := StartNode(dir, "127.0.0.1:0", &Cluster{Listen: "127.0.0.1:0", Routes: []string{"nats://127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "kino cluster init") {
		t.Fatalf("want an error naming kino cluster init, got %v", err)
	}
	if _, err := os.Stat(CredsFile(dir, eventstore.RoleServe)); err == nil {
		t.Fatal("credentials were generated for a lone cluster node")
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestRouteURL(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"nats://a.internal:6222", "nats://a.internal:6222", ""},
		{" b:6222 ", "nats://b:6222", ""},
		{"nats://a.internal", "", "want nats://host:port"},
		{"nats://kino-route:hunter2@a:6222", "", "leave credentials out"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := routeURL(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("want an error containing %q (and no secret), got %v", tt.err, err)
				}
				return
			}
			if err != nil || u.String() != tt.want {
				t.Fatalf("got %v, %v; want %s", u, err, tt.want)
			}
		})
	}
}

// nodeCerts writes a CA and one certificate per name (for 127.0.0.1, for
// both ends of a route) as PEM files.
func nodeCerts(t *testing.T, names ...string) (ca string, certs map[string][2]string) {
	t.Helper()
	c := tlstest.NewCA(t, "kino cluster test CA")
	certs = map[string][2]string{}
	for _, name := range names {
		cert, key := c.Issue(name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
		certs[name] = [2]string{cert, key}
	}
	return c.File, certs
}

// With route TLS, two nodes form a cluster over TLS; a node without TLS
// gets no route to them.
func TestClusterRoutesOverTLS(t *testing.T) {
	ca, certs := nodeCerts(t, "a", "b")
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	if err := InitCluster(dirs[0]); err != nil {
		t.Fatal(err)
	}
	copyCreds(t, dirs[0], dirs[1])
	copyCreds(t, dirs[0], dirs[2])
	addrs := []string{freeAddr(t), freeAddr(t)}
	routes := []string{"nats://" + addrs[0], "nats://" + addrs[1]}
	var nodes []*Embedded
	for i, name := range []string{"a", "b"} {
		e, err := StartNode(dirs[i], "127.0.0.1:0", &Cluster{Listen: addrs[i], Routes: routes, Name: name,
			CertFile: certs[name][0], KeyFile: certs[name][1], CAFile: ca})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Shutdown)
		nodes = append(nodes, e)
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for nodes[0].Peers() != 1 || nodes[1].Peers() != 1 {
		if time.Now().After(deadline) {
			l := make(errorLog, 4)
			nodes[0].srv.SetLogger(l, false, false)
			t.Fatalf("no TLS route between a and b: peers %d, %d: %s", nodes[0].Peers(), nodes[1].Peers(), <-l)
		}
		<-tick.C
	}

	refused := make(errorLog, 16)
	nodes[0].srv.SetLogger(refused, false, false)
	plain := startNode(t, dirs[2], freeAddr(t), routes[0])
	select {
	case <-refused:
		if plain.Peers() != 0 || nodes[0].Peers() != 1 {
			t.Fatalf("a node without TLS has %d peers, a %d", plain.Peers(), nodes[0].Peers())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a's routes logged no refusal of the node without TLS")
	}
}

func TestRouteTLSNeedsAllThreeFiles(t *testing.T) {
	dir := t.TempDir()
	if err := InitCluster(dir); err != nil {
		t.Fatal(err)
	}
	_, err := StartNode(dir, "127.0.0.1:0", &Cluster{Listen: "127.0.0.1:0", Routes: []string{"nats://127.0.0.1:1"}, CertFile: "node.pem"})
	if err == nil || !strings.Contains(err.Error(), "route TLS needs") {
		t.Fatalf("want a route TLS error, got %v", err)
	}
}
