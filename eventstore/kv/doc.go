// Package kv holds kino's services kept in NATS KV buckets rather than in
// the event stream: what is shared between nodes but is not history. Each
// service opens its bucket on the store's connection (eventstore.Store's
// NATS), as a lasting handle that makes its bucket again when a server
// restart lost it, and shows its consumers no nats type: the sessions and
// API key use of the user service (sessions.go).
package kv
