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
package kv
