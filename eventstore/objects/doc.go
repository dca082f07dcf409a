// Package objects is kino's media bucket in the JetStream object store
// (kino --media nats): a media.ObjectStore, so media.Bucket keeps its
// index, cache and scratch above it. Callers see names, readers and
// media.ObjectInfo, never a nats type: a missing object is a domain
// NotFound wrapping fs.ErrNotExist.
//
// Objects are written in full chunks (objectChunk) and read, from any
// offset, with JetStream batch direct gets (reader.go).
//
// The bucket is KINO_MEDIA (eventstore.MediaBucket; its stream is
// OBJ_KINO_MEDIA), on file storage with the streams' replicas. kino serve
// creates it; a worker only opens it.
//
// # Reading
//
// nats.go's ObjectStore.Get only streams an object from its start,
// through a new consumer per read, which /cdn's ranges and seeks cannot
// afford. So Open reads the object's description (one direct get: size,
// digest, modification time, stream sequence), and its reader asks for up
// to 16 chunks (2 MiB) per batch direct get, placing each chunk by its
// Nats-Num-Pending; a seek costs one request. The digest is not verified
// on reads, which serve ranges: JetStream's block checksums guard the
// bytes.
//
// # Deleting
//
// Delete removes the object and purges the delete marker the object
// store leaves in its place, so deleted videos leave nothing in the
// stream. A failed Put may leave chunks without a description, which
// media.Bucket's Reconcile cannot see (it works from List);
//
//	nats stream purge OBJ_KINO_MEDIA --subject '$O.KINO_MEDIA.C.<nuid>'
//
// removes them by hand.
package objects
