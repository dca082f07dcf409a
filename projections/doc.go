// Package projections keeps kino's read models in one bbolt file,
// projections.db. They are derived from the event stream only and apply
// has no side effects, so the file can be deleted and rebuilt from
// sequence 1 at any time: every request's reads come from here, no write
// is decided from here.
//
// # Following the stream
//
// Projector.Run tails the stream (EventSource.Tail: an ordered consumer
// from the stored checkpoint + 1). Events come decoded by the event store
// (domain.DecodeAs, with the type from the message's Kino-Event-Type
// header); a message that cannot be decoded, or is stored under another
// subject than its body names, comes as a domain.Refused, which apply
// skips. Events are collected into a group, committed when it holds the
// last event the stream had when it was read or MaxBatch (1000) events.
// Reading and committing run in two goroutines (group commit): while one
// group's transaction and fsync are under way the next group fills, so
// under load one fsync carries every event that arrived during the last
// one, and when idle an event is committed as soon as it arrives.
//
// Each batch is one bbolt Update transaction (applyBatch): it applies every
// event and writes the last applied sequence as meta/checkpoint. Events at
// or below the checkpoint are skipped, so a crash never applies an event
// twice or skips one. After the commit, WaitFor waiters are woken: the HTTP
// API waits on a write's sequence before it answers, so a read right after
// a write sees it.
//
// Within a batch each video and collection record is decoded and encoded
// once, however many events change it, and the batch's writes go to bbolt
// in key order (bbolt inserts far faster into neighbouring pages). Each
// writer reuses its memory from batch to batch (scratch: records and keys
// are encoded into an arena bbolt has copied into its pages by the next
// batch), because allocation drives the GC, and every GC cycle also marks
// the embedded NATS server's per-subject index.
//
// What requests read again and again is kept in memory (cache.go): the
// API keys Authenticate has read with their accounts, the video records
// Video has read, and the start of each account's queue of PENDING videos
// QueuePositions has walked. A commit forgets what it wrote before
// WaitFor's waiters are woken (keepCaches: every key after any account
// event; the records of the videos it wrote and their accounts' queues;
// everything after a collection's rename, which rewrites its videos), and
// a file swapped in by a rebuild empties them, so a read after a write
// never answers what was there before it, and a revoked key is refused as
// soon as its revocation has answered.
//
// When an event cannot be applied, the projector stops following: the read
// models stay at the last good batch, Err says why (logged once; /healthz
// answers 503), and WaitFor returns the error. A restart resumes from the checkpoint; a Rebuild repairs the
// file and the projector follows again.
//
// # The file
//
// Every bucket, with its key and value:
//
//	meta                  checkpoint             last applied stream sequence (8 bytes, big-endian)
//	meta                  schema                 layout version of the file (8 bytes)
//	videos                video id               Video (JSON)
//	videos_by_account     account 0 seq          video id
//	videos_by_collection  account 0 slug 0 seq   video id
//	videos_by_status      account 0 status 0 seq video id
//	collections           account 0 slug         Collection (with its videoCount)
//	accounts              slug                   Account (plan)
//	keys                  SHA-256 hex of the key Key (id, account, prefix, label); revoked keys are deleted
//	keys_by_account       account 0 key id       SHA-256 hex of the key
//	signing_keys          account 0 key id       SigningKey (the public half of a playback signing key)
//	users                 user id                User (never a password hash)
//	users_by_email        normalised email       user id
//	users_by_account      account 0 user id      user id
//	users_by_link         SHA-256 hex of the     user id
//	                      unused set-password
//	                      token
//	webhooks              account 0 id           Webhook
//	deliveries            webhook id 0 seq       one delivery attempt
//	redeliveries          webhook id 0           the redelivery of a delivery that gave up
//	                      delivery id
//	usage                 account                Usage: the account's live videos by status, and their bytes
//
// seq in the video indexes is the stream sequence of the video's
// UploadAccepted, so a reverse cursor scan lists videos newest first; a
// status change moves the video's videos_by_status entry. In deliveries it
// is the sequence of the DeliverySucceeded or DeliveryFailed, so a reverse
// scan lists attempts newest first.
//
// schema is the version of the layout (3). A file of an older layout is
// emptied when opened and the projector fills it again from sequence 1,
// since newer layouts added fields and indexes older records lack. A file
// from before the usage bucket is counted once from its videos when opened.
// The file is mapped with 1 GiB of address space up front (not memory), so
// bbolt never remaps it while it fits.
//
// usage is kept as video events apply, so an account's usage is one read.
// Each batch counts, for every video it touched, what the video counted
// when the batch began out and what it counts at the end in: the result
// does not depend on how events were batched, so a rebuild writes the same
// bytes as the follower, which Verify checks.
//
// QueuePositions gives a PENDING video's place in its account's queue: one
// walk of the account's PENDING keys in videos_by_status, in creation
// order, at most the limit the caller gives.
//
// # Rebuilding
//
// Projector.Rebuild (kino replay --nats, and POST /v1/admin/replay, both
// answered by a running kino serve) and RebuildFile (kino replay --data,
// offline, on a file opened with OpenIfFree, which fails at once with
// ErrInUse while a kino serve holds it) take the same steps (rebuildFile):
//
//  1. One at a time: a rebuild or verify holds the projector's rebuild lock.
//  2. Build a side file: BuildSide removes any leftover
//     projections.db.rebuild, creates it, notes the stream's last sequence
//     L and applies the stream from 1 to L in batches of RebuildBatch
//     (10 000) events, each one transaction writing the side file's
//     checkpoint. One goroutine reads and decodes while another commits
//     the previous batch. Progress is reported after each batch.
//     Meanwhile the projector keeps following into the live file, which
//     answers every request.
//  3. Pause the follower: it cancels its consumer (a commit under way
//     completes) and waits. The live file keeps answering reads.
//  4. Catch the side file up (CatchUp) to the stream's last sequence now:
//     the events that arrived during the build.
//  5. Swap (DB.replaceWith): every transaction of the live DB holds its
//     read lock; the swap takes the write lock, renames the side file over
//     projections.db (if that fails nothing has changed), makes the side
//     file's handle the DB's and closes the old one. Transactions that
//     started meanwhile run on the new file.
//  6. Resume: the applied sequence becomes the new checkpoint, WaitFor
//     waiters are woken and the follower starts again from it.
//
// Any error before the swap removes the side file and leaves the live read
// models as they were. No request fails during a rebuild: reads use the
// live file until the swap, the swap waits for them, and writes do not
// depend on the read models. While the follower is paused (steps 3 to 5)
// the read models do not advance, so a write's wait for its sequence may
// take that much longer. A rebuild needs room for a second file.
//
// Verify builds projections.db.verify the same way, pauses the follower,
// brings both files to the stream's current last sequence and compares
// them with Diff: bucket by bucket, in key order, every entry but the
// checkpoint, up to the number of differences asked for (never showing
// key hashes, secrets or link hashes). It then removes the side file and
// resumes; nothing is replaced. Dump writes every read model, one line per
// entry, without the checkpoint: two files with the same read models dump
// the same bytes (cmd/kino's TestReplayOfflineRebuildsByteForByte).
// BenchmarkRebuild measures BuildSide on synthetic streams:
//
//	go test -run '^$' -bench Rebuild -benchtime 1x ./projections
//
// # Not a read model
//
// A video's audit history (GET /v1/videos/{id}/events, kino history) is
// read from the event stream, not from here: it outlives the video's
// record, which Deleted removes, and is complete as soon as a write has
// answered. The webhook fan-out and sender read the stream too.
package projections
