package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/cmd/kino/bench"
	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/s3"
)

// mp4Box passes the upload's container check (tests use it too).
var mp4Box = bench.MP4Box

func newBenchCmd() *cobra.Command {
	var s3c s3.Config
	o := bench.Options{Start: startBenchKino, More: bench.Extra}
	var binary, serveFiles, serveAddr string
	o.CDN = func(ctx context.Context, s bench.CDNStore) (bench.CDNKino, error) { return startCDNKino(ctx, s, s3c) }
	o.CDNProcess = func(ctx context.Context, s bench.CDNStore) (bench.CDNKino, error) {
		return startCDNProcess(ctx, s, s3c, binary)
	}
	o.FileServer = func() ([]string, error) {
		bin, err := kinoBinary(binary)
		return []string{bin, "bench", "--serve-files"}, err
	}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench [--quick] [--only reads,writes,uploads,processing,replay,cdn,tus,search,outputs,fastpath,playable,quality] [--json]",
		Short: "Measure kino against baselines on this machine, side by side, in one run",
		Long:  bench.Describe + bench.PlayableDescribe,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serveFiles != "" { // the bare file server the cdn measure runs as a process
				return bench.ServeFiles(cmd.Context(), serveFiles, serveAddr)
			}
			o.S3 = s3c.Endpoint != ""
			results, err := bench.Run(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(results)
			}
			return bench.Table(out, results)
		},
	}
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "tiny sizes and short runs, for CI")
	cmd.Flags().StringSliceVar(&o.Only, "only", nil, "measure only these: reads, writes, uploads, processing, replay, cdn, tus, search; outputs, fastpath, playable, quality (only when named)")
	cmd.Flags().StringVar(&o.ReportDir, "report-dir", "bench-report", "where measures write their detailed reports (quality: a table and a plot)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	cmd.Flags().IntVar(&o.Runs, "runs", 5, "runs of each measure (the median is reported)")
	cmd.Flags().DurationVar(&o.Duration, "duration", 10*time.Second, "length of each load run")
	cmd.Flags().IntVar(&o.UploadMB, "upload-mb", 2048, "size of the upload measured, in MiB")
	cmd.Flags().StringVar(&binary, "kino-binary", "", "the kino binary the cdn measure runs as a process of its own beside nginx (default: this one)")
	cmd.Flags().StringVar(&serveFiles, "serve-files", "", "serve this directory with a bare net/http file server on --serve-addr until stopped (the cdn measure's own use)")
	cmd.Flags().StringVar(&serveAddr, "serve-addr", "127.0.0.1:0", "with --serve-files: the listen address")
	_ = cmd.Flags().MarkHidden("serve-files")
	_ = cmd.Flags().MarkHidden("serve-addr")
	s3Flags(cmd.Flags(), &s3c) // the cdn measure also measures this bucket when given
	return cmd
}

// benchKino is a Main as the bench sees it.
type benchKino struct{ *Main }

func (k benchKino) Store() *eventstore.Store          { return k.store }
func (k benchKino) CatchUp(ctx context.Context) error { return k.catchUp(ctx) }

// startBenchKino starts a private, quiet kino serve on dir for kino bench.
func startBenchKino(ctx context.Context, dir string, plans domain.Plans, transcoders int) (bench.Kino, error) {
	var workers WorkerConfig
	if transcoders > 0 {
		workers = WorkerConfig{Transcoders: transcoders, Attempts: 1, Backoff: []time.Duration{time.Second}, Stall: 2 * time.Minute}
	}
	m := &Main{Config: Config{Addr: "127.0.0.1:0", Data: dir, NATSListen: "127.0.0.1:0", Plans: plans,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Workers: workers}}
	if err := m.Run(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return benchKino{m}, nil
}
