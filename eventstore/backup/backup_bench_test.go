package backup_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/backup"
	"github.com/kino-video/kino/eventstore/benchstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// BenchmarkSave backs up an event stream of KINO_BACKUP_EVENTS synthetic
// events (default 100 000) while nothing else runs, and restores it into
// an empty server: the seconds of each and the backup's size.
//
//	KINO_BACKUP_EVENTS=1000000 go test -run '^$' -bench Save -benchtime 1x -timeout 30m ./eventstore/backup/
func BenchmarkSave(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("KINO_BACKUP_EVENTS")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	s := eventstoretest.Run(b)
	if err := benchstore.Import(ctx, s, benchstore.Synthetic(n)); err != nil {
		b.Fatal(err)
	}
	var save, restore time.Duration
	var size int64
	for b.Loop() {
		dir := b.TempDir()
		t0 := time.Now()
		if _, err := backup.Save(ctx, s.NATS().NC, dir, nil); err != nil {
			b.Fatal(err)
		}
		save += time.Since(t0)
		_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				size += fi.Size()
			}
			return err
		})
		srv := eventstoretest.Server(b, b.TempDir())
		nc, err := eventstore.Connect(srv.URL(), srv.Auth(eventstore.RoleAdmin), "restore")
		if err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if err := backup.Restore(ctx, nc, dir, nil); err != nil {
			b.Fatal(err)
		}
		restore += time.Since(t0)
		nc.Close()
	}
	b.ReportMetric(save.Seconds()/float64(b.N), "save-s")
	b.ReportMetric(restore.Seconds()/float64(b.N), "restore-s")
	b.ReportMetric(float64(size)/float64(b.N)/(1<<20), "backup-MiB")
	b.ReportMetric(float64(n), "events")
}
