package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/s3"
)

// newWorkerCmd is `kino worker`: the background workers without the HTTP
// API or the read models, so transcoding scales out across machines on the
// same NATS: kino's (--nats), or its own embedded node of kino's cluster
// (--nats-cluster). With --media dir, workers read originals and write
// outputs under --data/media, which must be the same directory the API
// serves (shared storage); with --media nats or s3 they fetch and publish them
// through the object store, and --data/media is their local scratch.
func newWorkerCmd() *cobra.Command {
	var conn natsClient
	var cluster clusterFlags
	var natsListen string
	var logLevel, keyFile, cdnURL, mediaKind string
	var s3c s3.Config
	var wc WorkerConfig
	var parseWorkers func() error
	cmd := &cobra.Command{
		Use:   "worker [--nats URL | --nats-cluster HOST:PORT --nats-routes URLS]",
		Short: "Run only the background workers (transcoding, webhook fan-out and delivery) against a kino NATS",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := parseWorkers(); err != nil {
				return err
			}
			if cdnURL != "" {
				u, err := url.Parse(cdnURL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return fmt.Errorf("--cdn-url must be an absolute http or https URL, the API's --cdn-url (got %q)", cdnURL)
				}
				cdnURL = strings.TrimRight(cdnURL, "/")
			}
			if wc.Transcoders == 0 && wc.Senders == 0 && cdnURL == "" {
				return errors.New("kino worker with --workers 0, --webhook-workers 0 and no --cdn-url has nothing to do")
			}
			level, err := parseLevel(logLevel)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			m := &Main{Config: Config{Log: log}}
			defer m.Close()
			ctx := cmd.Context()
			if wc.Senders > 0 {
				if wc.Secrets, err = secretKey(keyFile, conn.data, false); err != nil {
					return err
				}
			}
			node, err := cluster.cluster()
			if err != nil {
				return err
			}
			var cfg eventstore.Config
			if node != nil {
				// Every node a full peer: this worker's own NATS holds
				// replicas of kino's streams like any kino serve's.
				if cmd.Flags().Changed("nats") {
					return errors.New("give either --nats (kino's NATS) or --nats-cluster (an embedded node of kino's cluster), not both")
				}
				if m.nats, err = startNATS(conn.data, natsListen, node, log); err != nil {
					return err
				}
				conn.url = m.nats.URL()
				cfg = eventstore.Config{URL: conn.url, Auth: m.nats.Auth(eventstore.RoleWorker), Name: "kino worker", ReadyWait: cluster.readyWait}
			} else if cfg, err = conn.config("kino worker"); err != nil {
				return err
			}
			cfg.Log = log.With("component", "eventstore")
			if m.store, err = eventstore.Open(ctx, cfg); err != nil {
				return conn.explain(err, cfg.Auth)
			}
			mediaStore, err := openMedia(ctx, mediaKind, s3c, m.store, conn.data, 0)
			if err != nil {
				return err
			}
			progress, err := kv.OpenProgress(ctx, m.store)
			if err != nil {
				return err
			}
			if err := startWorkers(m, m.store, mediaStore, progress, wc, log); err != nil {
				return err
			}
			startHeartbeat(m, m.store, "worker")
			// The fan-out writes media URLs into webhook bodies: without
			// the API's --cdn-url this worker leaves it to the others.
			if cdnURL != "" {
				if err := startFanout(m, m.store, cdnURL, log); err != nil {
					return err
				}
			}
			log.Info("kino worker running", "nats", eventstore.RedactURL(conn.url), "media", mediaKind, "scratch", mediaStore.WorkRoot(), "transcoders", wc.Transcoders,
				"webhook_senders", wc.Senders, "webhook_fanout", cdnURL != "", "cdn", cdnURL)
			<-ctx.Done()
			log.Info("shutting down")
			return m.Close()
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&conn.data, "data", env("KINO_DATA", "./data"), "data directory whose media/ the API serves, holding the worker's NATS credentials (nats-creds/worker.nk) and secret.key (env KINO_DATA)")
	natsFlags(fs, &conn, eventstore.RoleWorker)
	mediaFlag(fs, &mediaKind, &s3c)
	fs.StringVar(&natsListen, "nats-listen", env("KINO_NATS_LISTEN", "127.0.0.1:4222"), "with --nats-cluster: client listen address of the embedded NATS node (env KINO_NATS_LISTEN)")
	cluster.register(fs)
	secretKeyFlag(fs, &keyFile)
	fs.StringVar(&cdnURL, "cdn-url", env("KINO_CDN_URL", ""), "the API's public media base (kino serve --cdn-url); when given, this worker also fans out webhooks, whose bodies carry media URLs built from it (env KINO_CDN_URL)")
	fs.StringVar(&logLevel, "log-level", env("KINO_LOG_LEVEL", "info"), "debug, info, warn or error (env KINO_LOG_LEVEL)")
	parseWorkers = workerFlags(fs, &wc)
	return cmd
}
