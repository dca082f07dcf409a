// Package kv holds kino's services kept in NATS KV buckets rather than in
// the event stream: what is shared between nodes but is not history. Each
// service opens its bucket on the store's connection (eventstore.Store's
// NATS), as a lasting handle that makes its bucket again when a server
// restart lost it, and shows its consumers no nats type:
//
//   - ratelimits.go: the API nodes' shared ledger of each rate limit;
//   - progress.go: the progress of running transcodes, published by
//     workers and followed by the API;
//   - directuploads.go: the one-time direct upload URLs;
//   - sessions.go: the login sessions and the API keys' last use.
//
// Their consumers declare the interfaces they use (httpapi's rate ledger,
// the transcoder's progress sink).
//
// # Buckets
//
// What changes every second, means nothing once a job ends, or must be
// shared by nodes without being a fact worth keeping lives here, never in
// events. kino serve creates or updates the buckets; other clients only
// open them and are told to start kino serve first when one is missing.
// Their names and configurations are in internal/natsconn (buckets.go);
// their replicas are the streams' (--replicas).
//
//   - KINO_PROGRESS: video id -> {"p","s","e"} (progress 0..1, speed,
//     seconds left; a plain number, as older workers wrote, is still
//     read). TTL 1 h. Memory on a single server, files when replicated
//     (natsconn.VolatileStorage). Values over 256 bytes are refused by
//     the bucket and ignored by readers.
//   - KINO_RATE: limited key -> each node's RateHolding. Files, history 1,
//     TTL 10 min, so keys no node touches drop out.
//   - KINO_DIRECT_UPLOADS: records of direct upload URLs, by keys httpapi
//     chooses (the SHA-256 of a token; account.<slug> for an account's
//     unused URLs). Files, TTL 25 h, longer than the longest-lived URL.
//   - KINO_SESSIONS: SHA-256 of a session id -> the session, an opaque
//     value. Files, history 1, TTL kino's --session-ttl: kino serve
//     updates the bucket's TTL when it changes.
//   - KINO_KEY_USAGE: API key id -> Unix milliseconds of its last use.
//     Files, history 1, no TTL.
//
// The worker role can read neither KINO_SESSIONS nor KINO_KEY_USAGE
// (natsserver's permissions). A CLI that finds them missing (no kino
// serve yet) gets Sessions that answer ErrNoSessionBuckets.
//
// # Progress
//
// Report rounds and bounds what a worker writes; readers (parseProgress)
// ignore values that are NaN, infinite, oversized or unreadable, clamp
// the progress to 0..1, and leave out a speed above 10 000 times real
// time or a time left above a week (MaxETA). Progress.Follow watches the
// bucket afresh after every reconnection, since a watch does not outlive
// its bucket's loss: a video being processed shows no progress until its
// worker reports again.
package kv
