// Package s3 keeps kino's media in a bucket of an S3-compatible service
// (AWS S3, Cloudflare R2, Backblaze B2, MinIO, Garage, Ceph, versitygw):
// a media.ObjectStore for media.Bucket, which keeps each video's index,
// the local cache of what /cdn serves and the transcoders' scratch above
// it, as for the JetStream bucket (kino --media s3).
//
// It speaks S3 through minio-go. Each object is written whole (PUT, or a
// multipart upload for a large one, 16 MiB parts or more, 4 at once),
// with its SHA-256 in the user metadata Kino-Digest, so that /cdn's ETags,
// the local cache and Publish's skip of unchanged outputs work as on the
// other stores. A failed multipart upload is aborted; one a crash left
// behind is aborted by AbortIncomplete (kino serve's reconcile pass), or
// by a bucket lifecycle rule. A request the service answers with a 5xx, a
// throttling code (SlowDown, 429) or a dropped connection is tried again,
// backing off exponentially with jitter (Config.MaxRetries).
//
// Reads are ranged GETs whose answer also describes the object (its
// Content-Range, Last-Modified and digest), so the bytes and their
// description are of the same object while a Put replaces it. Presign
// gives short-lived GET URLs for kino serve --media-redirect.
//
// Credentials come from an AWS shared credentials file
// (Config.CredentialsFile) or the usual AWS chain (environment, then
// ~/.aws, then the instance's role): never from a flag, so never in ps.
//
// Tests run against versitygw on a loopback port (package s3test).
package s3
