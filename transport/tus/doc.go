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
// Upload-Checksum. The rest of the protocol (offsets, per-plan limits,
// takeovers, acceptance as a video) is httpapi's tus handler, which declares the
// store interface it uses, the way tusd's handler declares DataStore and
// Locker.
package tus
