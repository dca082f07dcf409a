package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/adminrpc"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/projections"
)

// replayRequest and replayResult travel between `kino replay` and a
// running kino serve (over NATS) or POST /v1/admin/replay.
type replayRequest struct {
	Verify bool `json:"verify"`
}

type replayProgress struct {
	Applied         uint64  `json:"applied"`
	Total           uint64  `json:"total"`
	EventsPerSecond float64 `json:"eventsPerSecond"`
}

type replayResult struct {
	Applied         uint64   `json:"applied"`
	ElapsedMs       int64    `json:"elapsedMs"`
	EventsPerSecond float64  `json:"eventsPerSecond"`
	Verified        bool     `json:"verified"`
	Differences     []string `json:"differences"`
}

const maxDifferences = 50

func resultOf(p projections.Progress, verified bool, diffs []string) replayResult {
	if diffs == nil {
		diffs = []string{}
	}
	return replayResult{Applied: p.Applied, ElapsedMs: p.Elapsed.Milliseconds(), EventsPerSecond: p.PerSecond(), Verified: verified, Differences: diffs}
}

// replay runs a rebuild (or a verification) on a running service's
// projector: the handler behind kino.admin.replay and POST /v1/admin/replay.
func replay(ctx context.Context, p *projections.Projector, verify bool, send func(any)) (replayResult, error) {
	progress := throttled(func(pr projections.Progress) {
		send(replayProgress{Applied: pr.Applied, Total: pr.Total, EventsPerSecond: pr.PerSecond()})
	})
	if verify {
		diffs, pr, err := p.Verify(ctx, maxDifferences, progress)
		return resultOf(pr, true, diffs), err
	}
	pr, err := p.Rebuild(ctx, progress)
	return resultOf(pr, false, nil), err
}

// throttled passes on at most one progress report a second.
func throttled(fn func(projections.Progress)) func(projections.Progress) {
	var mu sync.Mutex
	var last time.Time
	return func(p projections.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) >= time.Second || p.Applied == p.Total {
			last = time.Now()
			fn(p)
		}
	}
}

func newReplayCmd() *cobra.Command {
	var conn natsClient
	var verify bool
	cmd := &cobra.Command{
		Use:   "replay [--data DIR | --nats URL] [--verify]",
		Short: "Rebuild every read model from the event stream (or, with --verify, compare a rebuild with them)",
		Long: `replay rebuilds the bbolt read models from stream sequence 1.

Offline (no kino serve running on the data directory): --data DIR starts the
stream's NATS store in-process, builds a side file and swaps it in.
Online: --nats URL asks the running kino serve to rebuild; it keeps answering
requests throughout and swaps the new read models in atomically.
--verify builds the side file and compares it with the live read models
instead of swapping; the exit status is 1 when they differ.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			var res replayResult
			var err error
			if cmd.Flags().Changed("nats") || os.Getenv("KINO_NATS_URL") != "" {
				res, err = replayOnline(cmd.Context(), &conn, verify, out)
			} else {
				res, err = replayOffline(cmd.Context(), conn.data, verify, out)
			}
			if err != nil {
				return err
			}
			return report(out, res)
		},
	}
	cmd.Flags().StringVar(&conn.data, "data", env("KINO_DATA", "./data"), "data directory of a stopped kino (env KINO_DATA); online, where its NATS credentials are")
	natsFlags(cmd.Flags(), &conn, eventstore.RoleAdmin)
	// Without --nats (or KINO_NATS_URL) replay works offline: no default URL.
	conn.url = env("KINO_NATS_URL", "")
	natsFlag := cmd.Flags().Lookup("nats")
	natsFlag.Usage = "NATS of a running kino serve: rebuild online; without it (and KINO_NATS_URL), rebuild offline from --data (env KINO_NATS_URL)"
	natsFlag.DefValue = eventstore.RedactURL(conn.url)
	cmd.Flags().BoolVar(&verify, "verify", false, "compare a rebuild with the live read models instead of replacing them")
	return cmd
}

func printProgress(out io.Writer, p replayProgress) {
	fmt.Fprintf(out, "replay: %d/%d events (%.0f events/s)\n", p.Applied, p.Total, p.EventsPerSecond)
}

func report(out io.Writer, res replayResult) error {
	if !res.Verified {
		fmt.Fprintf(out, "replay: rebuilt the read models from %d events in %.1fs (%.0f events/s)\n",
			res.Applied, float64(res.ElapsedMs)/1000, res.EventsPerSecond)
		return nil
	}
	for _, d := range res.Differences {
		fmt.Fprintln(out, "difference: "+d)
	}
	if len(res.Differences) > 0 {
		return fmt.Errorf("the live read models differ from a rebuild (%d difference(s) shown)", len(res.Differences))
	}
	fmt.Fprintf(out, "replay --verify: the live read models match a rebuild from %d events\n", res.Applied)
	return nil
}

func replayOnline(ctx context.Context, conn *natsClient, verify bool, out io.Writer) (replayResult, error) {
	var res replayResult
	err := withStore(ctx, conn, func(s *eventstore.Store) error {
		raw, err := adminrpc.Call(ctx, s, "replay", replayRequest{Verify: verify}, func(m json.RawMessage) {
			var p replayProgress
			if json.Unmarshal(m, &p) == nil {
				printProgress(out, p)
			}
		})
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &res)
	})
	return res, err
}

// replayOffline rebuilds the read models of a stopped kino from its own
// NATS store, started here without a listener reachable from outside.
func replayOffline(ctx context.Context, data string, verify bool, out io.Writer) (replayResult, error) {
	if _, err := os.Stat(filepath.Join(data, "nats")); err != nil {
		return replayResult{}, fmt.Errorf("no kino data in %s: %w", data, err)
	}
	// A running kino serve holds the file's lock: checked before its NATS
	// store is opened a second time.
	live, err := projections.OpenIfFree(filepath.Join(data, "projections.db"))
	if errors.Is(err, projections.ErrInUse) {
		return replayResult{}, fmt.Errorf("a kino serve is using %s: replay it online with --nats URL", data)
	} else if err != nil {
		return replayResult{}, err
	}
	defer live.Close()
	srv, err := natsserver.StartEmbedded(data, "127.0.0.1:0")
	if err != nil {
		return replayResult{}, err
	}
	defer srv.Shutdown()
	var res replayResult
	err = withStoreConfig(ctx, eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleAdmin), Name: "kino replay"}, func(s *eventstore.Store) error {
		progress := throttled(func(p projections.Progress) {
			printProgress(out, replayProgress{Applied: p.Applied, Total: p.Total, EventsPerSecond: p.PerSecond()})
		})
		diffs, pr, err := projections.RebuildFile(ctx, s, live, verify, maxDifferences, progress)
		res = resultOf(pr, verify, diffs)
		return err
	})
	return res, err
}
