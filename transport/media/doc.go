// Package media stores video files: originals once accepted, and the
// processed outputs (hls/, thumbnail.jpg, preview.mp4, the storyboard,
// download.mp4) of each video. It owns where they lie, how an upload in
// flight becomes an original, the transcoder's work directories and how
// their outputs are checked and published (all at once, or progressively
// while ffmpeg runs: early.go), opening a file for /cdn, and sweeping
// leftovers.
//
// # Backends
//
// Two backends hold the files, with the same methods (each user declares
// the ones it needs: httpapi.Media, transcoder.Media; mediatest checks
// both alike):
//
//   - Dir (OpenDir), a local directory: everything of a video under
//     <root>/<videoId>/ (dir.go);
//   - Bucket (OpenBucket), any object store behind the ObjectStore
//     interface: objects named <videoId>/original<ext>,
//     <videoId>/hls/..., and <videoId>/index.json listing them, with a
//     local directory, laid out like a Dir's, for uploads in flight and
//     transcode attempts, and an optional cache of copies of the objects
//     served (bucket.go, cache.go).
//
// A Dir's root, <data>/media for kino, holds <videoId>/original<ext>,
// <videoId>/hls/..., thumbnail.jpg, preview.mp4, the storyboard and
// download.mp4, beside .incoming (uploads in flight, and the directories
// Remove moves away before deleting them) and .work (transcode attempts);
// kino also keeps .tus/<node> there, and a Bucket's cache in .cache. Every
// process using one Dir must see the same directory (shared storage), or
// use a Bucket: otherwise a worker that takes a job for an original it
// cannot see spends its attempts on it, /cdn answers 404 on the other
// nodes, and a delete removes files only where it is served.
//
// # Publishing
//
// Publish takes the finished work directory back from ffmpeg's user
// first (reclaim: directories owned by kino and not writable by others,
// then no symlink, hard link, FIFO or device left) and then moves the
// outputs in. Over files published early, each file is renamed over its
// early copy (segments, then media playlists, then the master), then what
// the final tree lacks is removed, so a player never meets a missing file.
//
// PublishFiles publishes the HLS files ffmpeg has finished while it still
// writes the directory (early.go says how each file is checked where it
// is opened). A Dir copies the checked descriptor's bytes into a
// temporary file beside the destination and renames it over; directories
// are made one by one, never with MkdirAll, so a video directory Remove
// moved away is never made again.
//
// A Bucket writes <videoId>/index.json before the original (Commit), so
// that a failed or interrupted store leaves an object Remove can find.
// Commit streams the upload into the store and needs the room of a second
// copy there for a moment (CommitCopies); when the store does not take
// it, the local file stays the caller's, since a resumable upload's bytes
// must outlive an outage of the store. Publish stores each output,
// rewrites the index, then deletes what an earlier attempt wrote and this
// one did not; an output already listed whose SHA-256 matches is not
// stored again, so the final publish after early publishing costs about
// the playlists. Publish checks that the original exists before and after
// it stores, and Remove deletes the original first and reads the index
// again after, so a publish racing a delete either sees it and removes
// what it stored, or is seen by it.
//
// A Bucket's cache (kino serve's --media-cache-mb) keeps local copies of
// the objects /cdn reads, up to 64 MiB each, named by their SHA-256. The
// object is still described by the store first, so a deleted object is a
// 404 and a republished one gets a new copy; past the limit the oldest
// copies go. A segment's description is kept a second per node (stats:
// segments keep their bytes once published), so a crowd of players costs
// the store one request a second per segment; what this node publishes or
// removes it forgets at once.
//
// A Dir opens a file for /cdn with one openat2 on Linux
// (RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH from a held descriptor of the
// root, checked against the path once a second: open_linux.go), elsewhere
// by checking each step with Lstat (openPlain).
//
// # Sweeping
//
// Dir.Sweep empties .incoming and removes every video directory the read
// models do not know (a crash between storing a file and recording its
// event, or between a deletion's event and its files' removal); run it
// only when no upload is in flight and the read models are caught up.
// The transcoder removes dead attempts under .work itself. A Bucket
// splits the same work: SweepLocal empties the local .incoming, and
// Reconcile lists the whole store, so it runs beside serving, and removes
// the objects of videos the read models do not know, and objects named by
// no video id, except those stored in the last Grace (10 minutes: another
// node may be appending their UploadAccepted).
//
// # The object store seam
//
// ObjectStore (objectstore.go) is what a Bucket needs of an object store,
// declared here where it is used, as tusd's handler declares its
// DataStore: Put an object whole, Get it from an offset, Stat, List,
// Delete, and Ready. A missing object is an error matching
// fs.ErrNotExist. An optional capability is a small extra interface that
// Bucket looks for: ObjectOpener, an Open at any offset better than a Get
// after each seek. The index, the cache and the scratch directory sit
// above the interface once, for every store.
//
// kino's stores are the JetStream bucket KINO_MEDIA, in eventstore/objects
// (kino --media nats), and a bucket of an S3-compatible service, in
// transport/s3 (--media s3); media imports neither NATS nor an S3 client.
// A new object store is a package of its own that implements ObjectStore
// (and ObjectOpener if it can do better than ranged Gets), fills
// ObjectInfo.Digest with the SHA-256 when it has one (the cache and ETags
// use it; without it nothing is cached), and runs mediatest.Run through
// OpenBucket, as conformance_test.go does for the JetStream bucket and for
// a directory-backed store kept in the tests. Two more capabilities are
// optional: ObjectPresigner (short-lived URLs /cdn redirects to:
// Bucket.Presign) and IncompleteAborter (writes that never ended, aborted
// by Reconcile).
//
// # Moving a library
//
// Bucket.Import copies one video's files from any Source (Dir or Bucket:
// Videos lists the ids, Files a video's files) into the bucket, the index
// first, each file hashed and left alone when the bucket holds it with
// the same SHA-256, checked once stored (kino media migrate).
// mediatest.RunImport is its suite.
//
// # Safety
//
// Video ids are ULIDs, checked before any path or object name is built, so
// no client input ever becomes a path.
//
// Modes keep one video's files from another's ffmpeg: the root and .work
// are 0711 (passable, not listable), every video directory and .incoming
// 0700, owned by kino's user. An ffmpeg running as another user can reach
// only its own attempt directory, whose name it cannot list.
package media
