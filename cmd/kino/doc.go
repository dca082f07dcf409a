// Command kino is a self-hostable video hosting service (see README.md).
// This package parses flags and wires the other packages together: kino
// serve (Main), kino worker, the admin CLI, kino replay, kino upload and
// kino bench.
//
// # Start-up
//
// Main.Run is a plain list of steps, each a method of Main, run in this
// order; a step that fails ends the start, and Main.Close stops what the
// earlier ones started:
//
//  1. listen: bind the HTTP listener (--addr) first, so a busy port fails
//     the start at once, naming the flag, before --dev prints a key.
//     Nothing is served on it until the last step.
//  2. openData: the data directory (0711: ffmpeg's user passes through to
//     media/.work) and the secret key sealing webhook secrets
//     (KINO_SECRET_KEY, --secret-key-file, or <data>/secret.key, made on
//     the first start except on a cluster node).
//  3. startNATS: the embedded NATS server, unless --nats is given, and
//     its task nats-heal (natsserver.Embedded.Heal). A busy --nats-listen
//     address fails the start.
//  4. openStore: connect, create or update the streams and buckets
//     (eventstore.Open with Manage), then open the shared rate limits and
//     the user service.
//  5. openReadModels: projections.db and the projector (task projector),
//     then wait until the read models include every stored event.
//  6. openMedia: the media backend (--media) and its sweep of leftovers.
//     With --media nats or s3 only the local part runs here; the bucket's
//     reconcile pass runs beside serving (task media-reconcile: at once,
//     then hourly, each pass given up after 2 minutes).
//  7. devBootstrap: with --dev on an empty store, an account, a
//     collection and a key, printed once.
//  8. openProgress: the progress bucket and its watcher (task progress).
//  9. publicURLs: the default --base-url and --cdn-url from the bound port.
//  10. devUser: with --dev, a dashboard user and its one-time link.
//  11. startWorkers: the webhook sender (task webhook-delivery) unless
//     --webhook-workers 0, and the transcoder (task transcoder) unless
//     --workers 0; the transcoder needs ffmpeg and ffprobe on PATH (or in
//     --ffmpeg-dir), and the start fails without them.
//  12. startFanout: the webhook fan-out (task webhook-fanout).
//  13. heartbeat: this process's entry in KINO_WORKERS (task heartbeat),
//     which GET /v1/admin/health lists.
//  14. serveOperator: answer operator requests on kino.admin.> (task
//     admin; kino replay --nats).
//  15. serveHTTP: open the direct-upload bucket, find this node's tus
//     directory (<data>/media/.tus/<node-id>), build the API and the
//     dashboard's pages, start the task tus-sweep, then serve.
//
// Background loops are tasks (Main.start): an error that ends one early is
// logged ("background task stopped") and the service keeps answering.
//
// # Shutdown
//
// On SIGINT or SIGTERM, Main.Close stops, in this order:
//
//  1. HTTP: Shutdown stops accepting and gives in-flight requests 10 s,
//     then closes their connections.
//  2. The tasks, in the reverse order of their start: tus-sweep, the
//     operator requests (a rebuild requested over NATS is cancelled), the
//     heartbeat, the fan-out, the transcoder (ffmpeg is killed, running
//     jobs handed back), the sender (running POSTs cut off, their
//     deliveries released), the progress watcher, media-reconcile, the
//     projector, nats-heal. Each is waited for.
//  3. bbolt (projections.db).
//  4. The NATS connection, drained for at most 10 s.
//  5. The embedded server.
//
// A rebuild requested over HTTP runs in the API's own goroutine and is cut
// off with the process; either way the live read models are untouched
// unless the swap was done, and a leftover side file is replaced by the
// next rebuild.
//
// # kino worker
//
// kino worker connects to kino's NATS (--nats, with the worker role's
// credentials) or starts its own embedded node of kino's cluster
// (--nats-cluster); it creates no stream. It reads the secret key when it
// sends webhooks, opens its media backend without sweeping (with --media
// nats the bucket must exist) and the progress bucket without a watcher,
// and runs the webhook sender, the transcoder, its heartbeat and, given
// --cdn-url, the fan-out: no read models, no operator requests, no HTTP. It
// refuses to start with nothing to do. Its Close stops them in the reverse
// order, then drains its connection and shuts down its embedded node.
//
// # kino replay
//
// kino replay rebuilds the read models (projections' package doc has the
// steps), or with --verify compares a rebuild with them (at most 50
// differences):
//
//   - kino replay --nats URL asks the running kino serve over NATS
//     (adminrpc.Call on kino.admin.replay) and prints its
//     progress. Every kino serve on that NATS subscribes (not as a queue
//     group), so each rebuilds its own read models, and the CLI stops at
//     the first result. Once a server has answered, the CLI waits as long
//     as the work takes: should that process die mid-rebuild, it waits
//     until interrupted. POST /v1/admin/replay rebuilds the answering
//     instance only.
//   - kino replay --data DIR works offline: it refuses to run while a
//     kino serve holds DIR/projections.db (projections.OpenIfFree), starts
//     the NATS store of DIR/nats in the process on a random loopback port,
//     and runs projections.RebuildFile. It needs the embedded server's
//     store: with an external NATS the read models are rebuilt online, or
//     by deleting projections.db and starting kino serve.
package main
