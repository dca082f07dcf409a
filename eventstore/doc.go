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
package eventstore
