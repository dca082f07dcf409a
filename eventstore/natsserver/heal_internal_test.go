package natsserver

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
	"github.com/kino-video/kino/eventstore/internal/smalldisk"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The free space a restart waits for: what the restarted store needs to
// take a block of writes under the storage limit nats-server derives from
// free space, and on a large disk 64 MiB against restarting over and over;
// on a small volume no more than can be free there.
func TestRestartFree(t *testing.T) {
	const (
		mib   = int64(1) << 20
		gib   = int64(1) << 30
		block = 8 * mib
		// need is what the store alone needs with a nearly empty stream.
		need = (4*block + 2) / 3
	)
	tests := []struct {
		name                string
		size, used, reserve int64
		want                int64
	}{
		{"a large disk waits for 64 MiB", 500 * gib, 100 * mib, 1 * gib, 64 * mib},
		{"a large stream needs a third of itself free", 500 * gib, 3 * gib, 1 * gib, (3*gib + 4*block + 2) / 3},
		{"a 64 MiB volume with a 4 MiB reserve waits for one block of room", 64 * mib, 0, 4 * mib, need},
		{"a 64 MiB volume's wait never reaches 64 MiB, whatever the reserve", 64 * mib, 0, 1 * gib, need},
		{"a 256 MiB volume waits for an eighth of it", 256 * mib, 1 * mib, 1 * gib, 32 * mib},
		{"the reserve caps the headroom", 256 * mib, 1 * mib, 16 * mib, 16 * mib},
		{"the headroom never drops below what the store needs", 256 * mib, 60 * mib, 16 * mib, (60*mib + 4*block + 2) / 3},
		{"no reserve: what the store needs", 500 * gib, 0, 0, need},
		{"an unknown disk size: what the store needs", 0, 0, 1 * gib, need},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := restartFree(tt.size, tt.used, tt.reserve); got != tt.want {
				t.Fatalf("restartFree(%d, %d, %d) = %d, want %d", tt.size, tt.used, tt.reserve, got, tt.want)
			}
		})
	}
}

// A reserve given as a percentage is of the disk's size, as the API
// reckons it.
func TestHealReserve(t *testing.T) {
	tests := []struct {
		name string
		cfg  HealConfig
		size int64
		want int64
	}{
		{"bytes", HealConfig{Reserve: 4 << 20}, 64 << 20, 4 << 20},
		{"percent of the disk", HealConfig{ReservePercent: 5}, 200 << 20, 10 << 20},
		{"none", HealConfig{}, 64 << 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.reserve(tt.size); got != tt.want {
				t.Fatalf("reserve of %+v on %d bytes = %d, want %d", tt.cfg, tt.size, got, tt.want)
			}
		})
	}
}

// restartFree's premise, on a real server: restarted, nats-server takes
// 3/4 of the free space plus 3/4 of what its streams hold as its storage
// limit, so a store holding a lot needs a third of that free besides room
// for a block. Restarted with only what an empty store needs free, a
// server holding 32 MiB refuses every append; with restartFree free, it
// takes half a block and more.
func TestRestartFreeIsWhatARestartedServerNeeds(t *testing.T) {
	const size = 64 << 20
	dir := smalldisk.Mount(t, size)
	e, err := StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	publish := publisher(t, e)
	s, err := eventstore.Open(context.Background(), eventstore.Config{URL: e.URL(), Auth: e.Auth(eventstore.RoleServe), Name: t.Name(), Manage: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := publish(32 << 20); err != nil {
		t.Fatal(err)
	}
	used := storeUsed(e.server())

	filler := smalldisk.Fill(t, dir, restartFree(size, 0, 0))
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	if err := publish(1); !natsconn.StorageRefusal(err) {
		t.Fatalf("append after a restart with %d bytes free and %d held: %v, want insufficient resources", restartFree(size, 0, 0), used, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	smalldisk.Fill(t, dir, restartFree(size, used, 0))
	if err := e.restart(); err != nil {
		t.Fatal(err)
	}
	if err := publish(server.FileStoreMaxBlkSize / 2); err != nil {
		t.Fatalf("half a block of appends after a restart with restartFree (%d bytes) free and %d held: %v", restartFree(size, used, 0), used, err)
	}
}

// publisher returns a func that appends bytes of 64 KiB blobs to the event
// stream of e, each over its own connection so a restart in between does
// not matter.
func publisher(t *testing.T, e *Embedded) func(bytes int64) error {
	return func(bytes int64) error {
		t.Helper()
		seed, err := nats.NkeyOptionFromSeed(CredsFile(e.dataDir, eventstore.RoleServe))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(e.URL(), seed)
		if err != nil {
			return err // restarting
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		body := make([]byte, 64<<10)
		for i := int64(0); i*int64(len(body)) < bytes; i++ {
			if _, err := js.Publish(ctx, fmt.Sprintf("account.big-%d.Blob", i), body); err != nil {
				return err
			}
		}
		return nil
	}
}

// A server started on a nearly full disk sets itself a small storage
// limit (3/4 of the free space it found) and refuses every append once its
// store reaches it, however much space is freed later: its write health
// stays clean. Heal sees the store at its limit and, once there is room,
// restarts it, which measures the disk again.
func TestHealRestartsAStoreAtTheLimitItSetItself(t *testing.T) {
	const size = 64 << 20
	dir := smalldisk.Mount(t, size)
	filler := smalldisk.Fill(t, dir, 12<<20)
	e, err := StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	s, err := eventstore.Open(context.Background(), eventstore.Config{URL: e.URL(), Auth: e.Auth(eventstore.RoleServe), Name: t.Name(), Manage: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	publish := publisher(t, e)
	var refused error
	for i := 0; refused == nil; i++ {
		if i == 200 {
			t.Fatal("appends of 10 MiB never reached the store's limit")
		}
		refused = publish(64 << 10)
	}
	if !natsconn.StorageRefusal(refused) {
		t.Fatalf("append at the store's limit: %v, want insufficient resources", refused)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	healed := make(chan error, 1)
	go func() { healed <- e.Heal(ctx, HealConfig{Every: 50 * time.Millisecond, Reserve: 4 << 20}) }()
	t.Cleanup(func() { cancel(); <-healed })
	deadline := time.Now().Add(time.Minute)
	for publish(1) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("appends still refused a minute after the disk was freed; Heal reports %v", e.Health())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for e.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Heal still reports %v", e.Health())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
