// Package cdn serves the files of videos under /cdn: playlists, segments,
// thumbnails, previews, storyboards and downloads, with Range support and
// open CORS, for known videos only. A signed video's files need a valid
// playback token (package playback), and its playlists and storyboard are
// rewritten so every URI they list carries the token. httpapi's routes.go
// mounts Serve; errors are answered by respond.Error like every other
// protocol's.
//
// # What is served
//
// /cdn/<videoId>/<file> serves a video's outputs and nothing else
// (cdnPath): hls/master.m3u8, each rendition's (<height>p or audio)
// index.m3u8, its fMP4 segments seg_NNNNN.m4s and their initialization
// segment init.mp4 or init_N.mp4 (seg_NNNNN.ts in videos transcoded before
// fMP4), thumbnail.jpg, preview.mp4, preview.webp,
// storyboard.vtt, storyboard.jpg, download.mp4, and each text track's
// hls/captions/<track>.m3u8 and .vtt (captions.go). Originals, work files and
// directories never match (404). OPTIONS answers the CORS preflight;
// every answer allows any origin.
//
// # Checks
//
// Each request reads the video's record (Access): 404 when the read
// models know no such video (a deleted video's leftovers are never
// served), 403 when it is signed and ?token= is not a valid token for it
// (verifyPlayback, the one check of every signed media request: the
// token's signature and claims, then its origin claim against the
// request's Origin, else its Referer's origin). The file comes from the
// media backend's Open (a missing file is 404). A Range of more than
// maxRanges (16) ranges is 416 before anything is parsed, and
// http.ServeContent's own 416 is turned into the API's error body
// (rangeErrorWriter), both with Content-Range "bytes */size".
//
// # Caching
//
// Segments, storyboards, previews and downloads are cached a year,
// immutable (a new upload is a new id); the thumbnail and the animated
// preview five minutes (a chosen thumbnailTime remakes them); playlists a
// minute, and no-cache while the
// video is not COMPLETED (an EVENT playlist still grows). A signed video's
// bytes are private, max-age=3600 (no shared cache may hand them to a
// request without a token); its playlists and storyboard track are
// private, no-cache and served rewritten (serveRewritten, playback.Rewrite)
// with the request's token in every URI they list: no ETag and no Range
// for those, a 200 with the whole file.
//
// # Sending
//
// A file's bytes go from the page cache to the socket with sendfile
// (http.ServeContent's copy reaches the connection's ReadFrom through
// rangeErrorWriter), and the connection is corked while they do
// (respond.Cork): the answer leaves in full TCP segments, as nginx's
// tcp_nopush sends them, instead of a short one wherever a sendfile call
// ends, which costs the server and every player's side less per byte.
package cdn
