package hls

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

const (
	// MaxSize bounds a playlist read: far above a ten-hour video's media
	// playlist (under 2 MiB).
	MaxSize = 16 << 20
	// MaxSegment bounds a segment's duration, in seconds: kino's segments
	// are 4 s; an hour is no segment ffmpeg writes.
	MaxSegment = 3600
)

// Tags this package reads.
const (
	header    = "#EXTM3U"
	streamInf = "#EXT-X-STREAM-INF"
	media     = "#EXT-X-MEDIA"
	extinf    = "#EXTINF"
	// EndList ends a media playlist that gets no more segments.
	EndList Tag = "#EXT-X-ENDLIST"
	// PlaylistType is the name of the tag giving a media playlist's type
	// (EVENT, VOD).
	PlaylistType = "#EXT-X-PLAYLIST-TYPE"
)

// Tag is one line of a playlist that begins with '#', as written: a tag
// ("#EXT-X-VERSION:6", "#EXT-X-ENDLIST") or a comment.
type Tag string

// Name is the tag's name: what precedes its first ':' ("#EXT-X-VERSION").
func (t Tag) Name() string {
	n, _, _ := strings.Cut(string(t), ":")
	return n
}

// Value is what follows the tag's first ':' ("6"), "" when nothing does.
func (t Tag) Value() string {
	_, v, _ := strings.Cut(string(t), ":")
	return v
}

// Master is a master playlist.
type Master struct {
	Header   []Tag // the tags before the first variant stream, in order, the renditions (#EXT-X-MEDIA) among them
	Variants []Variant
	Trailer  []Tag // the tags after the last variant stream
}

// Variant is a variant stream of a master playlist.
type Variant struct {
	Tags  []Tag  // the tags between the variant before and this one's #EXT-X-STREAM-INF
	Attrs Attrs  // of its #EXT-X-STREAM-INF: BANDWIDTH, RESOLUTION, CODECS, AUDIO, SUBTITLES, ...
	URI   string // its media playlist
}

// Rendition is an alternative rendition (#EXT-X-MEDIA) of a group of
// variant streams: an audio track, subtitles.
type Rendition struct {
	Type       string // AUDIO, SUBTITLES, VIDEO, CLOSED-CAPTIONS
	GroupID    string // what variant streams name (AUDIO="...", SUBTITLES="...")
	Language   string // RFC 5646 tag; "" for none
	Name       string
	Default    bool
	AutoSelect bool
	URI        string // its media playlist; "" for none
}

// Tag is the #EXT-X-MEDIA tag of r, its attributes in the order of RFC
// 8216 4.3.4.1.
func (r Rendition) Tag() Tag {
	a := Attrs{{"TYPE", r.Type}, {"GROUP-ID", Quote(r.GroupID)}}
	if r.Language != "" {
		a = append(a, Attr{"LANGUAGE", Quote(r.Language)})
	}
	a = append(a, Attr{"NAME", Quote(r.Name)}, Attr{"DEFAULT", yesNo(r.Default)}, Attr{"AUTOSELECT", yesNo(r.AutoSelect)})
	if r.URI != "" {
		a = append(a, Attr{"URI", Quote(r.URI)})
	}
	return Tag(media + ":" + a.String())
}

// Renditions are the attribute lists of the master's #EXT-X-MEDIA tags,
// wherever they stand, in order.
func (m *Master) Renditions() ([]Attrs, error) {
	var out []Attrs
	add := func(tags []Tag) error {
		for _, t := range tags {
			if t.Name() != media {
				continue
			}
			a, err := ParseAttrs(t.Value())
			if err != nil {
				return fmt.Errorf("%s: %w", media, err)
			}
			out = append(out, a)
		}
		return nil
	}
	if err := add(m.Header); err != nil {
		return nil, err
	}
	for _, v := range m.Variants {
		if err := add(v.Tags); err != nil {
			return nil, err
		}
	}
	if err := add(m.Trailer); err != nil {
		return nil, err
	}
	return out, nil
}

// URIs are the playlists the master lists: its renditions' (those with a
// URI), then its variant streams', in order.
func (m *Master) URIs() ([]string, error) {
	rs, err := m.Renditions()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rs {
		if u, ok := r.Get("URI"); ok {
			out = append(out, u)
		}
	}
	for _, v := range m.Variants {
		out = append(out, v.URI)
	}
	return out, nil
}

// ParseMaster reads a master playlist.
func ParseMaster(data []byte) (*Master, error) {
	lines, err := split(data)
	if err != nil {
		return nil, err
	}
	m := &Master{}
	var pending []Tag
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, streamInf+":"):
			if i+1 >= len(lines) || strings.HasPrefix(lines[i+1], "#") {
				return nil, errors.New("a variant stream without its playlist")
			}
			a, err := ParseAttrs(Tag(l).Value())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", streamInf, err)
			}
			m.Variants = append(m.Variants, Variant{Tags: pending, Attrs: a, URI: lines[i+1]})
			pending = nil
			i++
		case !strings.HasPrefix(l, "#"):
			return nil, fmt.Errorf("a URI outside a variant stream: %.100q", l)
		case len(m.Variants) == 0:
			m.Header = append(m.Header, Tag(l))
		default:
			pending = append(pending, Tag(l))
		}
	}
	m.Trailer = pending
	return m, nil
}

// Encode writes the master playlist.
func (m *Master) Encode() ([]byte, error) {
	var w writer
	w.line(header)
	w.tags(m.Header)
	for _, v := range m.Variants {
		w.tags(v.Tags)
		if _, err := ParseAttrs(v.Attrs.String()); err != nil {
			w.fail(fmt.Errorf("%s of %q: %w", streamInf, v.URI, err))
		}
		w.line(streamInf + ":" + v.Attrs.String())
		w.uri(v.URI)
		w.line("")
	}
	w.tags(m.Trailer)
	return w.result()
}

// Media is a media playlist.
type Media struct {
	Header   []Tag // the tags before the first #EXTINF, in order
	Segments []Segment
	Trailer  []Tag // the tags after the last segment: #EXT-X-ENDLIST, ...
}

// Segment is a media segment of a media playlist.
type Segment struct {
	Tags     []Tag   // the tags between the segment before and its #EXTINF
	Duration float64 // seconds
	Title    string  // what follows the duration in #EXTINF, "" for none
	After    []Tag   // the tags between its #EXTINF and its URI
	URI      string

	text string // the duration as read, written back while Duration is what it reads as
}

// Seconds is the sum of the segments' durations.
func (m *Media) Seconds() float64 {
	var sum float64
	for _, s := range m.Segments {
		sum += s.Duration
	}
	return sum
}

// Type is the playlist's type (the value of its #EXT-X-PLAYLIST-TYPE
// before the first segment), "" when it gives none.
func (m *Media) Type() string {
	for _, t := range m.Header {
		if t.Name() == PlaylistType {
			return t.Value()
		}
	}
	return ""
}

// SetType sets the playlist's type in the place of the tag that gives it,
// or last in the header when none does.
func (m *Media) SetType(typ string) {
	tag := Tag(PlaylistType + ":" + typ)
	for i, t := range m.Header {
		if t.Name() == PlaylistType {
			m.Header[i] = tag
			return
		}
	}
	m.Header = append(m.Header, tag)
}

// Ended reports whether the playlist's last line is #EXT-X-ENDLIST: it
// gets no more segments.
func (m *Media) Ended() bool {
	last := m.Trailer
	if len(m.Segments) == 0 {
		last = m.Header
	}
	return len(last) > 0 && last[len(last)-1] == EndList
}

// ParseMedia reads a media playlist.
func ParseMedia(data []byte) (*Media, error) {
	lines, err := split(data)
	if err != nil {
		return nil, err
	}
	m := &Media{}
	var (
		seg     Segment
		inf     bool  // seg has its #EXTINF
		pending []Tag // the tags after the last segment
	)
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, extinf+":"):
			if inf {
				return nil, errors.New("two #EXTINF for one segment")
			}
			text, title, _ := strings.Cut(Tag(l).Value(), ",")
			d, err := strconv.ParseFloat(text, 64)
			if err != nil || math.IsNaN(d) || d < 0 || d > MaxSegment {
				return nil, fmt.Errorf("bad segment duration %.100q", text)
			}
			if len(m.Segments) == 0 {
				m.Header, pending = pending, nil
			}
			seg = Segment{Tags: pending, Duration: d, Title: title, text: text}
			inf, pending = true, nil
		case !strings.HasPrefix(l, "#"):
			if !inf {
				return nil, fmt.Errorf("a segment without #EXTINF: %.100q", l)
			}
			seg.After, seg.URI = pending, l
			m.Segments = append(m.Segments, seg)
			seg, inf, pending = Segment{}, false, nil
		default:
			pending = append(pending, Tag(l))
		}
	}
	if inf {
		return nil, errors.New("an #EXTINF without its segment")
	}
	if len(m.Segments) == 0 {
		m.Header = pending
	} else {
		m.Trailer = pending
	}
	return m, nil
}

// Encode writes the media playlist.
func (m *Media) Encode() ([]byte, error) {
	var w writer
	w.line(header)
	w.tags(m.Header)
	for _, s := range m.Segments {
		w.tags(s.Tags)
		text := s.text
		if d, err := strconv.ParseFloat(text, 64); err != nil || d != s.Duration {
			text = strconv.FormatFloat(s.Duration, 'f', 6, 64)
		}
		if math.IsNaN(s.Duration) || s.Duration < 0 || s.Duration > MaxSegment {
			w.fail(fmt.Errorf("bad duration %v of %q", s.Duration, s.URI))
		}
		w.line(extinf + ":" + text + "," + s.Title)
		w.tags(s.After)
		w.uri(s.URI)
	}
	w.tags(m.Trailer)
	return w.result()
}

// split checks data is a playlist and gives its lines after #EXTM3U,
// trimmed, blank ones left out.
func split(data []byte) ([]string, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("a playlist of over %d bytes", MaxSize)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errors.New("a NUL byte in the playlist")
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		l = strings.TrimSpace(l)
		if strings.ContainsRune(l, '\r') {
			return nil, errors.New("a carriage return inside a line")
		}
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 || lines[0] != header {
		return nil, fmt.Errorf("not a playlist (%d bytes)", len(data))
	}
	return lines[1:], nil
}

// writer writes a playlist's lines, keeping the first error.
type writer struct {
	b   bytes.Buffer
	err error
}

func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *writer) line(s string) {
	w.b.WriteString(s)
	w.b.WriteByte('\n')
}

func (w *writer) tags(tags []Tag) {
	for _, t := range tags {
		if !strings.HasPrefix(string(t), "#") || !oneLine(string(t)) {
			w.fail(fmt.Errorf("not a tag: %.100q", t))
		}
		w.line(string(t))
	}
}

func (w *writer) uri(u string) {
	if u == "" || strings.HasPrefix(u, "#") || !oneLine(u) {
		w.fail(fmt.Errorf("not a URI: %.100q", u))
	}
	w.line(u)
}

func (w *writer) result() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return w.b.Bytes(), nil
}

// oneLine reports whether s reads back as itself, one line: no line
// break, NUL or white space around it.
func oneLine(s string) bool {
	return !strings.ContainsAny(s, "\n\r\x00") && strings.TrimSpace(s) == s
}
