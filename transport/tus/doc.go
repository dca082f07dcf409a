// Package tus keeps the unfinished resumable uploads of kino's tus 1.0
// server (POST/HEAD/PATCH/DELETE /v1/uploads/tus). FileStore holds this
// node's uploads in one directory on the media store's file system, so the
// last byte commits as the video's original with a rename: per upload a
// file of bytes (.bin) and a record (.json) rewritten atomically after
// each PATCH, and, once the upload is a video, a completion record (.done)
// until it expires, so a client that lost the last answer learns the
// upload is complete instead of sending it again.
//
// The store also arbitrates requests: one request at a time holds an
// upload (Lock), and a later request of the same owner may take it over
// from a dead connection (Takeover interrupts the holder's body read).
//
// protocol.go holds what is pure in the protocol: the version and
// extensions spoken, and the parsing of Upload-Metadata and
// Upload-Checksum.
//
// Handler is the protocol over HTTP, mounted by httpapi's routes.go like
// every protocol: creation (with upload), HEAD, PATCH, DELETE and OPTIONS
// (handler.go), the acceptance of a complete upload as a video, retried
// while it is pending (finish.go), the direct upload URLs that let a
// browser upload without an API key (direct.go), and GET /v1/uploads
// (list.go). What it needs of the API server (who a request is, upload
// slots, the disk guard, the acceptance of a file as a video, shared with
// multipart uploads) is its Host (host.go), which httpapi implements.
// tus 1.0 (core, creation, creation-with-upload, termination, expiration,
// checksum) is our own code; tusd's unrouted_handler.go was the reference
// for the protocol's edge cases. The rules, in the order a request meets
// them, follow.
//
// # One acceptance
//
// A tus upload's last byte goes through Host.Accept, which is httpapi's
// acceptUpload, the tail of a multipart upload too: the collection checked
// again, the room check of a media store that commits by copying,
// Media.Commit, UploadAccepted appended, the original removed again if the
// event could not be stored. So they cannot drift apart.
//
// # Checks as early as tus allows
//
// At creation: Upload-Length against the plan (413), the filename's
// extension (415), the collection (404, the same error as multipart),
// Host.Writable (503: writable, and while appends are known to fail the
// store's own probe, since a creation has no append to find out with;
// PATCH checks it too), the account's unfinished uploads (at most 2 ×
// ConcurrentUploads, 429), its own Upload-Length against the account's
// storage quota (Host.CheckStorage, 413) and against --disk-reserve (507). Not other uploads' unsent bytes: those let one account
// refuse everyone's uploads; the disk is guarded where it fills
// (diskspace.Writer), and one account's unsent bytes are bounded by its
// plan (2 × ConcurrentUploads × MaxUploadBytes). The last byte checks the
// size again against the account's plan of that moment (a downgrade
// applies). The contents are sniffed (Host.Sniff, as multipart) once the
// first KiB is on disk, whatever the chunking: not a video, 415 and the
// upload removed.
//
// # The id is the video's
//
// Creation draws the ULID (Config.NewID, the event store's), and the
// upload's URL ends in it; the last byte commits the file under that id.
//
// # State on disk, beside the bytes
//
// Each unfinished upload is <data>/media/.tus/<node>/<id>.bin (the bytes
// received) and <id>.json (who, which collection, filename, Upload-Length,
// the offset, the expiry, the direct token's hash), written atomically
// (temp file + rename) at the end of every PATCH. .tus is on the media's
// file system, so the last byte commits with a rename (--media dir) or
// streams into the object store (--media nats) like a multipart upload. A
// restart reads the directory back (files without a readable record are
// removed); bytes beyond the recorded offset (a crash in the middle of a
// PATCH) are cut off before the next PATCH writes. The media sweep never
// touches .tus (not a video id). <node> is this node's id, 16 hex digits
// kept in <data>/node-id (made on the first start): nodes that share a
// media directory (--media dir on shared storage) each keep, read back and
// sweep only their own partials, so one node's start never removes or
// truncates another's. We chose files over a KV bucket: the bytes are on
// this node's disk anyway, so their state belongs next to them and needs
// no NATS round trip per chunk.
//
// # One PATCH at a time, the newest wins
//
// An in-memory hold per upload (FileStore.Lock). A second PATCH (or a
// DELETE) of the same owner takes over (Takeover), as tusd's does: it ends
// the first one's body read (its Body.Interrupt moves the connection's
// read deadline to the past), waits (at most 10 s) for it to record the
// bytes it wrote and let go, then goes on from the recorded offset; only
// one request ever writes. A takeover never cuts a request past its body
// (accepting the video). A PATCH holds an upload slot (Host.Acquire) while
// it streams, reads its body through Host.Body (httpapi's idleBody; 503
// with Retry-After: 1, which tus clients retry, where multipart answers
// 408, after --upload-idle-timeout without a byte, or below 1 KiB/s over a
// whole minute), claims the first 64 MiB of its Content-Length before
// reading it (Host.ClaimRoom, diskspace.Guard.Claim: 507 when the chunk
// does not fit beside the other requests' claims) and writes through
// diskspace.Writer (507 when the disk reaches its reserve), as multipart
// does. A body that breaks off keeps
// what arrived; with Upload-Checksum the chunk is kept whole or truncated
// away (460 on a mismatch).
//
// # A failed acceptance keeps the upload
//
// The last byte (finish.go) hands Media.Commit a hard link to the .bin
// (<id>.commit), never the .bin itself, so the bytes outlive a commit or
// an append that fails. The upload stays complete ("pending"); HEAD
// answers one byte short of its length (tus clients stop for good at an
// offset equal to the length), a PATCH of that byte or at the length
// without a body tries again, and so does Run every 5 s while the stores
// can take it (FinishPending). Each try first looks for the video (read
// models, then the stream: an append whose answer was lost may have
// landed), then removes what an earlier try left of the original, then
// commits: the video's id is the upload's, so no interleaving of tries
// makes two. A PATCH of the last byte looks for the video before it
// rewrites that byte: with --media dir the bytes may be linked to the
// video's original.
//
// # Expiry
//
// Upload-Expires is --tus-expiry (24 h) after the last PATCH that brought
// bytes, and at most 7 × that after creation. An expired upload answers
// 410 and is removed; Run (httpapi's SweepUploads, task tus-sweep of kino
// serve) removes the rest at start and every 5 minutes. DELETE removes at
// once.
//
// # Completion records
//
// A finished upload leaves <id>.done (account, direct token hash, length,
// metadata, expiry --tus-expiry later) in place of its .bin/.json, read
// back at start and swept like them: HEAD answers complete and a PATCH at
// the final offset is a 204 no-op, for the same owner only, so a client
// that lost the last answer does not upload the file again.
// X-HTTP-Method-Override on a POST to an upload URL is honoured (httpapi's
// tusMethodOverride, outside the router).
//
// # Direct upload URLs
//
// POST /v1/uploads draws 32 random bytes (the token, base64url in the URL)
// and the future video's id, and stores {account, collection, id,
// expiresAt, used} under the token's SHA-256 in the KV bucket
// KINO_DIRECT_UPLOADS (file storage, replicated like the other buckets,
// TTL 25 h). A KV bucket rather than events: a URL lives an hour, means
// nothing once used or expired, must be redeemable through any API node at
// once, and its removal is the bucket's TTL; no history of it is worth
// keeping (the upload itself is recorded by its UploadAccepted). The
// creation POST on the URL reads the record, refuses it when expired (410)
// or used (409), runs every creation check, and only then marks it used
// with a compare-and-set on the record's revision (two racing creations:
// one wins, the other gets 409). The upload records the token's hash;
// HEAD/PATCH/DELETE <url>/<id> compare it (constant time). Unknown tokens
// count against the client address like wrong API keys
// (Host.GuardCredentials); known ones against the URL's own budget
// (Host.Admit: direct:<id> in the shared limiter, 600 a minute), never the
// account's, so an end user holding a URL cannot lock the account out of
// its API. An account holds at most 100 unused URLs, counted in one record
// per account (account.<slug>, video id -> expiry, compare-and-set). A
// creation refused for its body marks the URL unused again. The direct
// routes alone answer CORS (Access-Control-Allow-Origin: *): they carry
// their own credential in the path, never a cookie. httpapi's request log
// writes their path with the token replaced by REDACTED.
//
// # In a cluster
//
// An unfinished upload belongs to the node that created it (its directory
// .tus/<node>, its lock, its count): its requests must reach that node.
// Route an upload's requests to one node (a load balancer's affinity on
// the path /v1/uploads/tus/..., whose last segment is the upload's id), as
// tusd's documentation asks of its own deployments; another node answers
// 404 and tus clients start a new upload. Direct upload URLs themselves
// are redeemable on any node (the KV bucket). GET /v1/uploads (the
// account's unfinished uploads, which the dashboard's upload page lists
// with a Discard button) reads the answering node's index only
// (FileStore.Unfinished, in memory, no disk scan).
package tus
