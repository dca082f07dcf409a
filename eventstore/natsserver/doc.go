// Package natsserver runs the nats-server embedded in kino serve: its
// store under the data directory, the nkey credentials of each client
// role and what each role may publish or subscribe (creds.go), the
// cluster a node forms with others over its routes, and Heal, which
// restarts a server whose store stopped taking writes once its disk has
// room again. Clients reach it through eventstore.Open with the Auth it
// hands out; nothing here keeps or reads events.
//
// # Credentials
//
// The embedded server (server name kino, JetStream store <data>/nats)
// takes only clients that prove they hold one of three nkeys (ed25519:
// the client signs the server's nonce, the seed never crosses the wire).
// The first start generates them as seed files under <data>/nats-creds
// (CredsDir; directory 0700, files 0600); later starts read them back, so
// the public keys never change unless the files are replaced. One per
// role (eventstore.Roles), in <role>.nk (CredsFile):
//
//   - serve: kino serve, may do everything.
//   - admin: the operator's CLI and kino replay; publishes everything and
//     subscribes to everything but kino.admin.> (it calls operator
//     requests, never answers them in kino serve's place).
//   - worker: kino worker, only what transcoding and delivery need.
//
// The worker role may publish only the events of its trade
// (video.*.TranscodeStarted, TranscodeSucceeded, TranscodeFailed,
// TranscodeInterrupted, TranscodePlayable; webhook.*.DeliverySucceeded,
// DeliveryFailed), delivery.* (the fan-out's deliveries) and jobs.> (the
// transcode queues); JetStream's INFO, STREAM.INFO, STREAM.MSG.GET and
// DIRECT.GET; create, read the info of, fetch from and acknowledge only
// its own consumers (transcoder and webhook-fanout on KINO_EVENTS,
// webhook-delivery on KINO_DELIVERIES, those of KINO_JOBS); the buckets
// KINO_PROGRESS, KINO_SEND_LOCKS, KINO_DELIVERY_ATTEMPTS and KINO_WORKERS;
// the media bucket's objects and the purge of its stream OBJ_KINO_MEDIA
// (a purge cannot be limited to some subjects, so a worker could purge
// every object of the bucket, but never delete, reconfigure or list it);
// and _INBOX.>. It subscribes to _INBOX_worker.> (its replies, on its own
// inbox prefix: never kino serve's), jobs.transcode.> (a new job
// wakes idle slots) and video.*.Deleted (a delete stops that video's
// ffmpeg). workerDenied keeps it from reading KINO_SESSIONS and
// KINO_KEY_USAGE. It reads KINO_SNAPSHOTS (as it may read the stream) but
// cannot write it, so it cannot hand kino serve a forged account state.
// So a worker's seed cannot issue a key, change a plan,
// create a collection or webhook, accept an upload, or touch a stream's
// configuration. It can forge the events of its trade for any video and
// queue deliveries the senders sign; every reader checks that a message's
// subject is the one its body names (eventstore's Refused events).
//
// Clients find their seed by role under the data directory unless given
// credentials (eventstore.Auth: an nkey seed or .creds file,
// user/password, token, TLS); a refused client gets
// eventstore.ErrUnauthorized. With an external NATS (kino --nats URL)
// nothing here runs: the operator's server authenticates kino with what
// the --nats-* flags give.
//
// # A cluster
//
// StartNode with a Cluster makes the embedded server a node of the NATS
// cluster kino (ClusterName); its server name, also its JetStream peer
// name, is Cluster.Name (kino's --nats-name, default DefaultNodeName) and
// must stay the same across restarts. Every node must accept the same
// public keys, so a clustered node refuses to start without serve.nk
// under nats-creds (unless Cluster.SecretFile names a secret kept
// elsewhere), rather than generate keys of its own: InitCluster (kino cluster init) makes the seeds and
// cluster.secret once (ClusterSecretFile, at least 32 characters), and
// the operator copies nats-creds to every node. Routes authenticate as
// user kino-route with that secret as password; StartNode adds both to
// the route URLs in memory (a route URL carrying credentials is refused),
// so the secret is never on a command line or in a log. Routes may add TLS
// with a certificate, its key and a CA that verifies every node's
// certificate.
//
// What the cluster changes for clients is elsewhere: the replicas of the
// streams and buckets (cmd/kino's --replicas, by default one per node in
// the route list, at most 3), Open's ReadyWait and the quorum watch
// (eventstore).
//
// # Heal
//
// nats-server stops acknowledging appends to a stream whose store failed
// a write (a full disk), for good: space freed later changes nothing until
// the server restarts. It also refuses appends past the storage limit it
// set itself at start (kino sets none: 3/4 of the free space it found plus
// 3/4 of what its streams held), and turns JetStream off on a file
// permission error. Embedded.Heal (kino serve's task nats-heal) reads the
// server's health every HealConfig.Every (default 1 s); when a stream
// reports a write error, the store is within 1 MiB of its limit, or
// JetStream is off, Embedded.Health reports it, and once the store's file
// system has room again (restartFree) Heal restarts the server in this
// process on the same port and store. Clients reconnect by themselves;
// what was acknowledged is on disk.
//
// restartFree is the larger of two amounts. What the restarted store
// needs to take one more 8 MiB file-store block under the limit it will
// set: a third of what its streams hold plus 4/3 of a block. And headroom,
// so that a disk still being filled does not restart the server over and
// over: 64 MiB, or an eighth of a smaller disk, never more than the
// service's reserve (HealConfig.Reserve, kino's --disk-reserve), past
// which the service counts the disk as having room again.
//
// An external NATS is not healed: its appends are refused with 503 and
// /readyz reports jetstream until the operator restarts that server.
package natsserver
