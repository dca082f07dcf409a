// Package httpapi is kino's public HTTP API (spec: video-hosting-interface.md)
// under /v1, on gorilla/mux, and the server that mounts kino's other HTTP
// protocols beside it. Handlers return errors; respond.Error turns them
// into the spec's {"error", "message"} bodies.
//
// routes.go lists every route. httpapi itself holds the /v1 resources
// (videos and their search, collections, playback tokens, the account),
// authentication (API keys, sessions and logins under /auth, the
// operator's guard), multipart uploads, and the request log. It mounts
// package admin (/v1/admin), package captions (/v1/videos/{id}/captions,
// through captionHost), package keys (/v1/keys and /v1/signing-keys,
// through keyHost), package cdn (/cdn), package player (/play, /embed,
// /oembed and their /assets, through playHost), package probes (/healthz,
// /readyz), package webhooks (/v1/webhooks, through webhookHost) and
// package tus (tus and direct upload URLs, through uploadhost.go); package
// drain bounds every request body and lets early answers reach the
// client. Rate limits are package ratelimit, playback tokens package
// playback.
//
// # API keys and sessions
//
// authenticate guards every /v1 account route; operatorOnly every
// /v1/admin route (package admin).
//
//   - API key: "Authorization: Bearer <key>", the scheme matched
//     case-insensitively. A key that is not domain.KeyPrefix plus 32
//     base62 characters is refused without a lookup; otherwise its SHA-256
//     (hex) is looked up in the keys read model and compared in constant
//     time. A miss waits once (catchUp: at most 2 s, the stream's last
//     sequence asked at most every 100 ms) until the read models include
//     every stored event, then looks again, so a key issued by the CLI a
//     moment earlier works at once. Its use is recorded (Users.KeyUsed).
//   - Session: /auth/login sets a random session id in an HttpOnly,
//     SameSite=Lax cookie, kino_session, or __Host-kino_session when the
//     browser reached kino over HTTPS (TLS, a trusted proxy's
//     X-Forwarded-Proto, or an https public URL); the session lives in
//     NATS (transport/accounts) under the id's SHA-256, so every API node
//     serves it. A request without an Authorization header but with the
//     cookie is an account user's (accountSession): the cross-origin check,
//     the session, and a user of an account (an operator acts on accounts
//     through /v1/admin only: 403). The caller then carries User (the
//     user's id; "" for a key).
//   - crossOrigin (http.CrossOriginProtection: Sec-Fetch-Site, else Origin
//     against Host; the public URL's origin is trusted) refuses an unsafe
//     cross-origin request with 403: every cookie-authenticated /v1 and
//     /v1/admin request, and /auth/login, /auth/logout, /auth/password.
//   - session resolves the cookie to its user in the read models, with the
//     password generation the session began with. A user not found, or
//     with an older generation, gets one catchUp; still behind is a 503,
//     never the end of the session, which every node shares. A user removed
//     since, or a different generation (the password changed), ends the
//     session there and then (Users.EndSession).
//   - operatorOnly: an operator's session (with the cross-origin check), or
//     Config.Admin.Token as a Bearer value, compared in constant time.
//     Without an admin token configured a Bearer value finds no route
//     (404).
//   - Identify gives the dashboard's page handlers the session's Identity;
//     pages are GETs and need no cross-origin check.
//   - Key management (/v1/keys, package keys) refuses a caller without
//     User (403): a leaked key must not mint more keys.
//
// Unknown or ended sessions, missing or wrong keys and wrong admin tokens
// all count against the client address (guardCredentials, below).
//
// # Rate limits
//
// The algorithm and its sharing between API nodes are package ratelimit;
// here is what is counted. Every authenticated request is counted against
// one budget (rateBudget, charge): an API key's against its account's
// (the plan's RequestsPerMinute, shared by every key of the account), a
// logged-in user's browser against its own, "user:<id>", at the plan's
// rate but at least SessionRequestsPerMinute (300), so the dashboard and
// the account's integrations never starve each other; a direct upload URL
// is counted against two of its own (chargeAll): the URL's, "direct:<id>"
// (600 a minute), and all the account's URLs together, "uploads:<account>"
// (ten times the plan's rate), so issuing URLs does not multiply an
// account's rate. Every counted answer carries
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (Unix
// seconds, rounded up); past the budget it is 429 with Retry-After (whole
// seconds, 1 to 60).
//
// Requests without valid credentials are counted by client address
// (clientAddr: the TCP peer, an IPv6 one by its /64, or, when the peer is
// in Limits.TrustedProxies, the rightmost X-Forwarded-For hop that is not
// a trusted proxy) against Limits.AuthFailuresPerMinute (default 60): an
// address over it gets 429 before its credentials are looked at, so a
// right guess is refused too. That check does not ask the ledger for an
// address this node has not counted, so across nodes a few more lookups
// than the limit may happen; every failure is counted against the shared
// budget. Logins count against Limits.LoginsPerAddress (20) by client
// address and Limits.LoginsPerUser (10) by the email's user key, so
// unknown emails count alike (loginLimit; the per-email one can lock a
// user out while someone keeps trying their email, docs/security.md).
//
// Upload slots (uploadSlots): an account runs at most its plan's
// ConcurrentUploads uploads at once across the API nodes (429), each node
// recording its count under "up:<slug>" in the same ledger with a 30 s
// lease renewed every 10 s while any runs, so a node that dies frees its
// slots within 35 s; the server-wide Uploads.MaxInFlight (--max-uploads,
// default 64; 503) stays per process, as it protects that process's
// memory. Still per process: POST /v1/webhooks/{id}/test (package
// webhooks: 5 at once, then one every 12 s per subscription).
//
// # Multipart uploads
//
// POST /v1/videos (uploadVideo), in order:
//
//  1. The upload takes a slot: its account's first (429), then the
//     server's (503).
//  2. Refusals before the body is read: a Content-Type that is not
//     multipart/form-data (400); a Content-Length above the plan's
//     MaxUploadBytes plus 1 MiB of framing, or less that framing past the
//     account's storage quota (checkStorage, 413); the event store not
//     taking writes (writable: 503 with Retry-After); the disk inside
//     --disk-reserve, or the announced length not fitting above it beside
//     what the requests in flight have claimed (claimRoom, package
//     diskspace: 507); the first 64 MiB of it is then claimed until it is
//     written or the request ends.
//  3. The body is read part by part through a 1 MiB buffer, never held in
//     memory. Each read moves the connection's read deadline to now plus
//     Uploads.IdleTimeout (--upload-idle-timeout, default 30 s), and a body
//     below 1 KiB/s over a whole minute is cut off alike: both 408
//     (idleBody). A collection part sent before the file is looked up at
//     once, so an unknown collection is 404 before the file is received.
//  4. The file part: its name must carry a supported extension, and its
//     first ffmpeg.SniffLen bytes must be one of the containers kino reads
//     (sniffVideo: 415 before anything is stored). It then streams into a
//     file from Media.Incoming (on local disk with either media backend)
//     through a diskspace.Writer: 413 once more than the plan's limit has
//     arrived, 507 at the disk's reserve or when the disk or quota is full,
//     a logged 500 for other failures of the server's disk (storeFailure:
//     no message names a path); a body that breaks off is 400.
//  5. acceptUpload, shared with tus: an empty file is 400; once the read
//     models hold the account's own writes (awaitOwnWrites: also for a
//     direct upload URL or the sweep, which do not come as the account),
//     the collection is checked again (404; it may have been deleted while
//     the file streamed) and the file's size against the storage quota
//     (413); a media backend that commits by copying needs the file's size
//     above the reserve again; Media.Commit makes the file the video's
//     original, under the ULID drawn for it and the lower-cased supported
//     extension (no client string becomes a path or an object name); then
//     UploadAccepted is appended and noted as the account's write (wrote).
//  6. When the append fails, undoUpload removes the committed original.
//     When its outcome is unknown (a timeout, a lost answer) the stream
//     decides: the file stays if the video's stream holds its event, or
//     cannot be read (the start-up media sweep removes it if the event
//     never landed). Any early return removes the incoming file.
//
// DELETE /v1/videos/{id} appends Deleted first, then removes the video's
// files (a failed removal is logged; the media sweep at start-up catches
// it). An upload and a concurrent collection delete both check the read
// models (a video and its collection are separate aggregates), so a race
// can leave a video in a deleted collection; it stays listable, readable
// and deletable.
//
// # Reading one's own writes
//
// A write whose answer comes from the write's own result (POST and DELETE
// /v1/collections, an upload, a retry, the webhook endpoints) answers as
// soon as its events are stored and ends with wrote: the server notes the
// write's last sequence for the caller's account (ownWrites). Every
// request authenticated as that account waits first (awaitOwnWrites, in
// authenticate) until the read models include that sequence, at most
// Config.SettleTimeout (default 5 s), so a GET right after a POST sees it
// while the POST did not wait for the projector's fsync. Other accounts
// never wait for it; an operator's /v1/admin request waits for every
// account's. A request that did wait looks at its key or session again,
// since one of those writes may have revoked it. An account with nothing
// pending costs one atomic load; one caught up is forgotten. Writes
// through another API node are not seen sooner than its own read models
// show them.
//
// A command decided on a new stream of its own whose answer is its own
// result (POST /v1/collections: the stream refuses a slug already taken)
// reads nothing those writes change but its key, so it waits only for the
// account's settled writes that timed out (below; a revoked key is one of
// them), not for the rest: 8 clients creating collections for one account
// do not queue behind the projector's fsync.
//
// Other writes settle before they answer: they wait until the projector
// has applied the write's last sequence. These are the writes whose answer
// is read back from the read models (PATCH), and those that take access
// away from requests not authenticated as the account (a revoked key, a
// stricter playback policy, a deleted video, a removed user or session):
// a playback token or a public URL must meet the change at once. A
// timeout is logged ("read models behind a write") and not returned: the
// write is durable either way, and the account's next requests wait for
// it as after wrote. A handler that reads its answer back from the read
// models after a settle timeout may find them behind: PATCH
// /v1/collections/{slug} (writeCollection) and PATCH /v1/videos/{id} then
// answer with the state before the write, or 404 when the read models do
// not hold the collection or video yet.
package httpapi
