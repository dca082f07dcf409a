// Package hls reads and writes HLS playlists (RFC 8216): the master
// playlist that lists a video's variant streams and alternative
// renditions, and the media playlists that list each rendition's
// segments. It is pure: it works on bytes, strings and structs, and
// never touches a file or the network; its callers read the playlists
// ffmpeg writes, check them, merge and rewrite them, and write kino's.
//
// # What it reads
//
// ParseMaster and ParseMedia take a whole playlist. Lines end in \n or
// \r\n; each is read without the white space around it, and blank lines
// are skipped. The first line that is not blank is #EXTM3U. A line that
// begins with '#' is a Tag, kept as written (a comment too); any other
// line is a URI.
//
//   - A master is its header (the tags before the first variant stream:
//     #EXT-X-VERSION, the renditions' #EXT-X-MEDIA, anything else), its
//     variant streams (an #EXT-X-STREAM-INF, its attributes, and the URI
//     on the next line, with the tags that stood between it and the
//     variant before), and the tags after the last variant.
//   - A media playlist is its header (the tags before the first #EXTINF),
//     its segments (the tags before the #EXTINF, its duration and title,
//     the tags between it and the URI, the URI), and the tags after the
//     last segment, #EXT-X-ENDLIST among them.
//
// Tags this package does not know stay where they stood, as written, so a
// playlist it reads and writes back loses nothing ffmpeg put in it.
// Attribute lists (Attrs) keep their attributes in order and their values
// as written. A segment keeps its duration's text while its Duration is
// unchanged.
//
// # What it writes
//
// Encode writes #EXTM3U, then each part in the order above, one line
// each, ending in \n; a master's variant streams are each followed by a
// blank line, as ffmpeg writes them. So every playlist ffmpeg and kino
// write reads and writes back to the same bytes (the golden tests hold
// them); one written otherwise comes back with \n endings and without its
// other blank lines and surrounding white space, meaning the same. A
// segment made here, not read, gets its duration with six decimals, as
// ffmpeg's own.
//
// Encode refuses what would not read back as itself: a tag that is not one
// line beginning with '#', a URI that is empty, begins with '#' or is not
// one line, an attribute list that does not parse.
//
// # What it refuses
//
// A playlist of more than MaxSize bytes, one holding a NUL byte or a
// carriage return inside a line (a playlist is text, in lines), one whose
// first line is not #EXTM3U; in a master, a
// URI that no #EXT-X-STREAM-INF announces, or a variant stream whose next
// line is not its URI, or whose attributes do not parse; in a media
// playlist, a URI without its #EXTINF, an #EXTINF without a URI after it,
// two #EXTINF for one segment, or a duration that is not a number from 0
// to MaxSegment seconds. These are errors, never panics, and what Parse
// keeps is never more than the playlist it read.
//
// RewriteURIs is the one part that reads a single line: /cdn streams a
// signed video's playlists line by line, giving every URI they list its
// token, so a request costs a line of memory whatever the playlist.
package hls
