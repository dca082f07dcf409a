// Package queue holds kino's work queues on JetStream: durable consumers
// whose events are jobs (Work, Job), the per-account transcode queue
// KINO_JOBS and its fair scheduler (FairWork), the webhook deliveries
// waiting in KINO_DELIVERIES with the senders' shared state (SendState),
// and the heartbeats of the processes running them (Heartbeat, Workers).
// A job is acknowledged only once its side effect is recorded, so a
// crash redelivers it. The transcoder's side (the limit per plan, what a
// job does) is in transport/transcoder.
//
// # Consumers
//
// Every consumer here is durable and shared by every process, with
// explicit acks and unlimited deliveries: the domain counts attempts, so
// a job is never dropped silently. A worker makes its consumers when it
// starts and retries until they exist (untilDone: the first failure is
// logged, then pauses grow to 5 s), since a worker that gave up on a
// cluster electing its leader would run on and take no job. Where a
// consumer starts is fixed when it is created: an existing one keeps its
// deliver policy.
//
// # KINO_JOBS
//
// KINO_JOBS (JobsStream) is a work-queue stream on jobs.>, on file
// storage, replicated like the others, dropping duplicates within 24 h.
// Jobs wait on jobs.transcode.<account> and, while they wait out a retry
// backoff, on jobs.later.<account>. The account token is the slug as it
// is, any other name a hash (queueToken). Only kino serve creates the
// stream: FairWork on a store without it says to start the kino serve of
// this version first.
//
// The intake (FairConfig.Intake, the transcoder's durable transcoder on
// KINO_EVENTS) copies each event it takes into its account's queue, with
// Nats-Msg-Id the video id for an UploadAccepted and <Type>-<event id>
// for any later job (a retry), so that a redelivered event is a duplicate
// and a retry is never taken for its upload's copy; then it acks. A
// message that does not decode, or names no account, is terminated. A new
// intake delivers the whole stream, so a first kino serve over a stream
// from elsewhere queues every UploadAccepted once (the transcoder acks
// those already finished); an existing intake keeps its position and
// takes a changed filter list where it stands, so that neither loses nor
// repeats an event.
//
// Each account with jobs has a durable consumer account-<token>, filtered
// to its subject, with the worker's AckWait and MaxAckPending set to the
// account's limit (FairConfig.Limit). It is made on the first pick that
// finds the account's jobs, updated when the limit or the ack wait
// changes, and removed by the server after an hour without pulls
// (InactiveThreshold). The durable backoff (BackoffDurable) on
// jobs.later.> holds each job put aside until its Kino-Not-Before, then
// publishes it at the end of its account's queue (message id
// backoff-<seq>) and acks it.
//
// # Picking a job
//
// FairWork runs FairConfig.Concurrency slots. A free slot (picker.next):
//
//  1. reads the info of KINO_JOBS filtered to jobs.transcode.>, which
//     lists the accounts with jobs and how many;
//  2. reads each account consumer's info: NumAckPending is the account's
//     jobs running anywhere (delivered, not acked), NumPending those not
//     yet started;
//  3. tries the accounts fewest running first; among equals, the one this
//     process served least recently; then by token. The first whose
//     consumer yields a job (FetchNoWait(1)) runs it. Accounts at their
//     limit are tried too: the server hands them only a job that is not
//     really running (left by a crashed worker, still counted until it is
//     redelivered);
//  4. with nothing to run, waits for a wake-up (any message on
//     jobs.transcode.>, to which every process subscribes, or a local job
//     ending) or for FairConfig.Poll (default 1 s), which catches jobs
//     freed elsewhere and crashed workers' jobs.
//
// A job is checked before it runs: it must decode and be a job of its
// queue's account, else it is terminated (only the intake and workers
// write there).
//
// A freed slot always goes to an account with no job running before one
// with jobs running, so an account uploading one video while another has
// 50 queued waits at most for the jobs running when it arrived (and one
// job of each account tied with it). The limit is enforced by the server
// (MaxAckPending), so two processes picking the same account cannot
// exceed it: the loser's fetch comes back empty and it tries the next. A
// pick costs one stream info, one consumer info per account with jobs and
// one fetch per account tried; each such account has a durable consumer
// (a Raft group on a cluster). The round-robin memory is per process.
//
// # Retry and release
//
// Job.Retry (putAside) publishes a copy on jobs.later.<account> with
// Kino-Not-Before (message id later-<seq>: a repeated hand-back of one
// delivery is one copy), then acks. A job waiting out its backoff is then
// not one of its account's running jobs; a NakWithDelay would be, and
// could hold a free plan's only slot for the whole backoff.
//
// Job.Release (requeue, on shutdown) publishes a copy at the end of the
// account's queue (message id back-<seq>), then acks. A Nak would not do:
// the server keeps a Nak'd message's redelivery in memory only, so an
// embedded server stopped with its process would redeliver it only AckWait
// after the last heartbeat. Should the process die between the two steps,
// the job runs twice at worst, and the video's aggregate records one
// result. If the copy cannot be published, the job is Nak'd. The delivery
// count carries on across copies (Kino-Handed-Back).
//
// # Deliveries and heartbeats
//
// KINO_DELIVERIES holds one message per webhook delivery (Enqueue: the
// same message id twice is one delivery), dropping duplicates within
// 24 h. Its senders share two buckets: KINO_SEND_LOCKS, one key per
// subscription with a POST under way, living SendLockTTL (30 s) after its
// last renewal so that a crashed sender's lock lapses; and
// KINO_DELIVERY_ATTEMPTS, the POSTs started per delivery, since the
// message's own delivery count also counts hand-backs of a busy
// subscription. Heartbeat rewrites a process's entry in KINO_WORKERS every
// HeartbeatEvery (10 s); an entry lapses WorkerTTL (30 s) after its last
// write, so a dead process drops out of Workers on its own.
package queue
