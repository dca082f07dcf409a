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
// kino's store is the JetStream bucket KINO_MEDIA, in eventstore/objects
// (kino --media nats); media imports no NATS. A new object store (S3, say)
// is a package of its own that implements ObjectStore (and ObjectOpener
// if it can do better than ranged Gets), fills ObjectInfo.Digest with the
// SHA-256 when it has one (the cache and ETags use it; without it nothing
// is cached), and runs mediatest.Run through OpenBucket, as
// conformance_test.go does for the JetStream bucket and for a
// directory-backed store kept in the tests.
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
