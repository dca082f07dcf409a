// Package eventstore keeps kino's event stream on NATS JetStream: Open
// connects (see Auth) and creates or finds the stream, Append adds events
// with optimistic concurrency, Load, Scan, Next, Between, Tail and Watch
// read them back, Execute runs a command's load-decide-append loop, and
// Health, Writable and the quorum watch say whether the stream can take
// writes now. Callers never see a nats type or error code: a
// wrong-last-sequence is a domain Conflict, an outage a domain
// Unavailable.
//
// Each other concept that lives on NATS is a sibling package under
// eventstore/, built on the connection Store.NATS hands out: natsserver
// (the embedded server and its cluster), queue (the work queues, the fair
// transcode scheduler and the workers' heartbeats), kv (the services kept
// in KV buckets), objects (the media bucket), adminrpc (operator requests
// to kino serve). Open still finds or makes their streams and buckets
// (their names and configurations are in internal/natsconn), all at once
// on a new cluster, so that a process is ready when Open returns. What
// decides (passwords, sessions' lifetimes, accounts) is not here but in
// the packages that call the store (transport/accounts).
//
// # The stream
//
// KINO_EVENTS (StreamName) holds every event under the subject
// <aggregate>.<id>.<Type> (Subjects), on file storage, kept forever, with
// direct gets allowed (AllowDirect) and a duplicate window of 2 minutes.
// Every message carries its event type in the Kino-Event-Type header
// (HeaderEventType), so consumers route without decoding bodies.
//
// # Execute
//
// Execute(ctx, log, id, cmd) runs one command on one aggregate:
//
//  1. Load the aggregate's events by direct get: the sequence of its last
//     event first (0 when none; the last message of the subject filter
//     <aggregate>.<id>.*, which the stream's subject index answers at
//     once), then the filter walked from sequence 1 up to it. The walk
//     never asks past the last event: with more than 64k subjects in the
//     stream, JetStream answers "no next message" for a wildcard by
//     reading every later message. Any replica may answer either read;
//     the last sequence returned is that of the last event the walk read,
//     so a walk answered by a replica behind makes the append conflict
//     and start over, never decide on a history it did not see. An aggregate whose decisions depend on a few
//     event types, each stored at most once or counting only by its last,
//     names them with DecisionTypes(); on a *Store, Execute and Current
//     then read only the aggregate's last sequence and the last message
//     of each of those types. domain.Webhook is such an aggregate (its
//     stream also holds a DeliverySucceeded or DeliveryFailed per
//     attempt, which nothing decides on), and domain.AccountPlan. An
//     aggregate with snapshots starts from its snapshot (below).
//  2. Fold the events with Evolve.
//  3. Decide. An error is returned as it is (a domain Conflict such as
//     "collection already exists" is not retried). No events is a no-op:
//     nothing is appended.
//  4. Append each event to <aggregate>.<id>.<Type> with Nats-Msg-Id set to
//     the event's id (a ULID), the expected stream KINO_EVENTS, and the
//     expected last subject sequence set to the loaded one over the filter
//     <aggregate>.<id>.*, so that the check covers every event type of the
//     aggregate.
//  5. Retry. A wrong last sequence is a domain Conflict wrapping
//     ErrConcurrency; Execute starts over from Load after a random pause
//     of up to 1 ms doubled per attempt (at most 16 ms), at most
//     Config.MaxAttempts times (default 5; 5 on a Log that is not a
//     *Store), then returns the last Conflict, wrapped. On a *Store the
//     process's commands on one aggregate take turns (aggregateLocks), so
//     only writers in other processes (kino worker, the other nodes of a
//     cluster) can make an attempt fail.
//
// Record appends without the concurrency check: a subscription's delivery
// attempts, from which nothing is decided.
//
// # Snapshots
//
// An aggregate whose history grows without bound (domain.Account: keys
// created and revoked over and over) names a SnapshotVersion. On a *Store,
// Execute and Current then start from its snapshot in the KV bucket
// KINO_SNAPSHOTS (key <aggregate>.<id>: the state as JSON, the sequence
// and id of the event it was taken after, the version) and fold only the
// events after it; Execute writes a new snapshot once it has folded and
// appended 32 events past the last one. A snapshot is used only when it
// is of the current version and its event is in the stream at its
// sequence with its id: garbage, an old shape, a snapshot newer than a
// restored stream or of another stream's event is ignored, and the
// history is folded whole. The bucket is a cache of the stream: losing it
// costs reads, never a decision. So an account command costs the same at
// 100 events as at 100 000 (BenchmarkAccountCommandHistory,
// docs/performance.md), where it read every event before. Workers read the
// bucket but may not write it. domain.AccountPlan, the plan alone, is
// decisionTyped: the transcoder's fair scheduler reads two events of an
// account, not its history.

// # Lost acknowledgements
//
// A publish with no answer is sent again with the same Nats-Msg-Id and
// expectation: while the connection was down, for as long as the context
// allows; on other transient errors up to 3 attempts, after 100 ms and
// 200 ms. If a resend meets a wrong last sequence, the aggregate's last
// message is read: when its Nats-Msg-Id is ours, the earlier attempt
// landed and its sequence is returned; otherwise it is a Conflict. Each
// attempt waits at most Config.AckTimeout (default 5 s).
//
// # Outages
//
// The store follows its connection and logs one line when it drops and
// one when it is back. Under a context marked FailFast (what a request
// with a client waiting wants) operations fail at once while the
// connection is down, with a domain Unavailable wrapping ErrUnavailable
// (and ErrNotStored when nothing was sent), and are cancelled when it
// drops; without it (workers, the CLI) they wait for the connection as
// long as their context allows. An append cancelled by a dropped
// connection has an unknown outcome: it was sent and may be stored.
//
// nats-server, once a stream's store has failed a write (a full disk),
// answers no more appends to it until it restarts (natsserver's Heal
// does that). So an append not acknowledged in time, or refused for want
// of storage, marks writes as failing (Health().Writes): appends are then
// refused at once but for one probe per Config.ProbeEvery (default 2 s),
// and the mark clears when an append succeeds or the connection is made
// again. On a cluster an append still unanswered after its retries means
// the stream has no leader: it is Unavailable too, and marks writes as
// failing; Health clears that mark without a client's append by reading
// the stream's info (which only a leader answers) at most once per probe
// interval.
//
// kino serve on a replicated stream also runs the quorum watch
// (quorum.go): every second it reads the stream's info and counts the
// replicas its leader has heard from in the last 4 s. While fewer than a
// majority answer, or no leader does, writes are refused at once and
// Health says why, so /readyz answers 503 for as long as appends cannot
// succeed.
//
// # Reads
//
// Tail and Scan read through an ordered consumer. Next, Between, LastOf
// and LeaderLast (any stream's last message under a subject: the sessions
// and playback keys buckets read through it) use STREAM.MSG.GET, which the
// stream's leader answers (a direct get may be answered by any replica,
// possibly behind). While the stream has no leader they ask again until
// their context ends (10 s without a deadline), each request bounded at
// 3 s: a server that lost the leader may not answer at all. Under
// FailFast (an HTTP request) they ask once, and a stream without a
// leader is Unavailable: at once when the servers say so, after 3 s when
// they do not answer.
// A message that does not decode, or whose body names another subject
// than the one it is stored under, is logged and comes back as a
// domain.Refused event in its place (Load and Between skip it), so that no
// reader applies or decides on it and none stops on it. Watch is a core
// NATS subscription on one event subject: it stores nothing and sees only
// events appended after it returns.
package eventstore
