// Package captions reads caption files (WebVTT or SRT) that API clients
// upload and writes them back as one normalized WebVTT file, the text
// track an HLS subtitle rendition serves to hls.js, Shaka, video.js and
// Safari. It is pure: it works on bytes and never touches a file.
//
// # What it reads
//
// Parse takes a whole file of at most MaxInput bytes; the caller reads at
// most MaxInput+1 and lets Parse refuse the rest. The bytes are UTF-16
// after a UTF-16 byte order mark, else UTF-8 (a byte order mark is
// skipped) when they are valid UTF-8, else Windows-1252. Text holding a
// NUL is not a caption file. Lines end in \n, \r\n or \r, and a line of
// white space only is blank.
//
// A file that starts with "WEBVTT" alone or followed by a space or tab is
// WebVTT (see parseWebVTT): its header, NOTE, STYLE and REGION blocks and
// cue identifiers are skipped. Anything else is read as SRT (see
// parseSRT), leniently: cue numbers may be missing or wrong, and blank
// lines between cues may be missing or many. Both read timestamps with or
// without hours, with a '.' or ',' before one to three digits of
// fraction.
//
// A line meant as a cue timing that does not read as one is an error that
// names the line, as is a cue past MaxTime, a cue's text past MaxCueText
// bytes or MaxCueLines lines, and a file of more than MaxCues cues. A cue
// that shows nothing (its end not after its start, or no text) is dropped;
// a file left without cues is an error.
//
// # What it keeps
//
// A cue keeps its times (to the millisecond), its WebVTT settings that are
// valid (vertical, line, position, size and align; not region, as regions
// are dropped), and its text cleaned to valid WebVTT cue text (see
// cleanText): only WebVTT's tags, no control or bidirectional override
// characters, '&', '<' and '>' escaped. So an SRT cue keeps its <i>, <b>
// and <u> tags and loses <font>. ASS override codes, which SRT writers
// leave in the text, are dropped, and {\an7}, {\an8} and {\an9} become
// the setting line:0 (the top of the video) of a cue without one.
// Overlapping cues stay, as WebVTT allows them; cues are sorted by start,
// keeping the file's order for equal starts.
//
// # What it writes
//
// Track.WebVTT writes "WEBVTT", a blank line, then each cue as its timing
// line "hh:mm:ss.mmm --> hh:mm:ss.mmm" with its settings, its text and a
// blank line, all ending in \n, with no identifiers or comments. Parse
// reads what it wrote back to the same cues (FuzzParse holds it to that).
package captions
