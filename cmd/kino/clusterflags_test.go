package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/natsserver"
)

func TestClusterReplicasDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		listen string
		routes []string
		want   int
	}{
		{"three nodes, itself listed", "127.0.0.1:6222", []string{"nats://127.0.0.1:6222", "nats://127.0.0.1:6223", "nats://127.0.0.1:6224"}, 3},
		{"three nodes, itself not listed", "127.0.0.1:6222", []string{"nats://127.0.0.1:6223", "127.0.0.1:6224"}, 3},
		{"two nodes", "127.0.0.1:6222", []string{"nats://127.0.0.1:6222", "nats://127.0.0.1:6223"}, 2},
		{"a route listed twice counts once", "127.0.0.1:6222", []string{"nats://127.0.0.1:6223", "nats://127.0.0.1:6223"}, 2},
		{"five nodes: at most 3", "127.0.0.1:6222", []string{"nats://a:6222", "nats://b:6222", "nats://c:6222", "nats://d:6222", "nats://e:6222"}, 3},
		{"listening everywhere, itself named by a local address", "0.0.0.0:6222", []string{"nats://127.0.0.1:6222", "nats://127.0.0.1:6223"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clusterReplicas(&natsserver.Cluster{Listen: tt.listen, Routes: tt.routes}); got != tt.want {
				t.Fatalf("replicas %d, want %d", got, tt.want)
			}
		})
	}
}

func TestClusterFlagsRefuseHalfAConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		flags clusterFlags
		err   string // "" : valid
	}{
		{"not clustered", clusterFlags{readyWait: 1}, ""},
		{"routes without a cluster address", clusterFlags{routes: "nats://a:6222", readyWait: 1}, "need --nats-cluster"},
		{"a name without a cluster address", clusterFlags{name: "a", readyWait: 1}, "need --nats-cluster"},
		{"a cluster address without routes", clusterFlags{listen: "0.0.0.0:6222", readyWait: 1}, "needs --nats-routes"},
		{"no time to get ready", clusterFlags{listen: "0.0.0.0:6222", routes: "nats://a:6222"}, "--nats-ready-timeout"},
		{"complete", clusterFlags{listen: "0.0.0.0:6222", routes: " nats://a:6222, nats://b:6222 ,", readyWait: 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.flags.cluster()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tt.flags.listen != "" && len(c.Routes) != 2 {
					t.Fatalf("routes %q", c.Routes)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("want an error containing %q, got %v", tt.err, err)
			}
		})
	}
}

// A cluster node started before the cluster's credentials were copied to
// it refuses to start and makes none of its own: a secret.key or nkeys of
// its own would silently differ from every other node's.
func TestClusterNodeWithoutSharedCredentialsMakesNone(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	m := &Main{Config: Config{Addr: "127.0.0.1:0", Data: data, NATSListen: "127.0.0.1:0", Log: quiet,
		Cluster: &natsserver.Cluster{Listen: "127.0.0.1:0", Routes: []string{"nats://127.0.0.1:1"}}, ReadyWait: time.Second}}
	err := m.Run(context.Background())
	m.Close()
	if err == nil {
		t.Fatal("a cluster node started without the cluster's credentials")
	}
	for _, p := range []string{filepath.Join(data, "secret.key"), natsserver.CredsFile(data, eventstore.RoleServe)} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was generated", p)
		}
	}
}
