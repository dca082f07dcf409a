// Package diskspace keeps a reserve of free disk space under uploads: the
// reserve's configuration (--disk-reserve: bytes or a percentage), the room
// left above it on the file systems of the data directories, and the
// writer of every upload, which stops it once the room is gone, so the
// event store on the same disk never runs dry. It knows no HTTP: httpapi answers 507.
//
// # The reserve
//
// ParseReserve reads --disk-reserve (default 1GiB; "5%" of the file
// system's size; "0" for none). Guard.Room is the smallest free space above
// the reserve among Guard.Dirs (kino serve guards the data directory and
// its media directory, usually one file system); negative once one of them
// is inside its reserve. On systems without statfs (statfs_other.go)
// the reserve is not enforced.
//
// # Where uploads meet it
//
// Room is what statfs says; Unclaimed is Room less the claims of the
// requests in flight: the bytes each announced (its Content-Length) and
// has not written yet. Without the claims, several uploads started at once
// each found the same room free, and together wrote into the reserve.
//
// httpapi checks the room three times for an upload:
//   - before the body is read (Guard.Claim for a multipart upload or a tus
//     chunk, Guard.Fits for a tus creation): 507 while the disk is inside
//     its reserve, or when the announced length does not fit in the
//     unclaimed room; the claim then holds the first ClaimWindow (64 MiB)
//     of it until written or the request ends (no more: a slow client
//     must not hold room it may never fill). A room that cannot be
//     measured is logged and the upload let through;
//   - while the body streams to disk: a Writer checks the unclaimed room
//     (its own claim aside) at its first write, then each time it has
//     written its share (over the Writers streaming) of a quarter of the
//     room it found (at least a Block, at most Guard.Every: httpapi 8 MiB),
//     and fails with ErrNoRoom once it is negative, so uploads without a
//     length, alone or together, stop within a little of the reserve
//     however close to it they start;
//   - before committing to a media backend that copies the file (the
//     object store on the embedded NATS's disk): the file's size must fit
//     the unclaimed room again.
//
// A tus creation claims nothing: its bytes may come hours later, or never,
// and one account's unfinished uploads must not hold another's back.
// /readyz reports Room, what the disk holds, not what is claimed.
//
// # Writing an upload
//
// Writer is also how an upload's bytes reach their file: io.Copy to it
// takes its ReadFrom, which writes whole aligned Blocks (64 KiB) as they
// fill and holds back the rest until more arrives or the body ends. The
// sizes a socket hands out, written as they come, leave most writes
// ending inside a page, which the page cache zeroes before the next write
// fills it: measured, that halved a 2 GiB upload's speed.
//
// The same reserve bounds the embedded NATS server's restart after a full
// disk (cmd/kino passes it to natsserver.Heal).
package diskspace
