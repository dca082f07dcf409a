package hls

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// golden are the playlists of testdata: ffmpeg's as kino's ladder has it
// write them (ffmpeg_*: one process, and the two lanes of a split
// ladder, with and without audio), kino's own (kino_*: an EVENT playlist
// published while encoding, a VOD one), and playlists with tags this
// package does not know in every place they can stand (unknown_*).
func golden(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.m3u8"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden playlists: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

func isMaster(name string) bool {
	return strings.Contains(name, "master") || name == "unknown_tags.m3u8"
}

// Every golden playlist reads and writes back to the very same bytes.
func TestGoldenRoundTrip(t *testing.T) {
	for name, data := range golden(t) {
		t.Run(name, func(t *testing.T) {
			rewrite := rewriteMedia
			if isMaster(name) {
				rewrite = rewriteMaster
			}
			got, err := rewrite(data)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(data) {
				t.Fatalf("wrote\n%s\nwant\n%s", got, data)
			}
		})
	}
}

// What the parts of ffmpeg's master and media playlists read as.
func TestParseFFmpeg(t *testing.T) {
	g := golden(t)
	m, err := ParseMaster(g["ffmpeg_master_audio.m3u8"])
	if err != nil {
		t.Fatal(err)
	}
	uris, err := m.URIs()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"audio/index.m3u8", "480p/index.m3u8", "360p/index.m3u8", "240p/index.m3u8"}; !slices.Equal(uris, want) {
		t.Fatalf("URIs %v, want %v", uris, want)
	}
	if bw, _ := m.Variants[1].Attrs.Get("BANDWIDTH"); bw != "1020800" {
		t.Fatalf("BANDWIDTH %q", bw)
	}
	if c, _ := m.Variants[0].Attrs.Get("CODECS"); c != "avc1.64001e,mp4a.40.2" {
		t.Fatalf("CODECS %q", c)
	}
	if len(m.Header) != 2 || m.Header[0].Name() != "#EXT-X-VERSION" || m.Header[0].Value() != "6" {
		t.Fatalf("header %q", m.Header)
	}

	p, err := ParseMedia(g["ffmpeg_media_audio.m3u8"])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Segments) != 3 || p.Segments[2].URI != "seg_00002.ts" || p.Segments[0].Duration != 4.017056 {
		t.Fatalf("segments %+v", p.Segments)
	}
	if s := p.Seconds(); s < 9.0326 || s > 9.0327 {
		t.Fatalf("Seconds %v", s)
	}
	if !p.Ended() || p.Type() != "EVENT" {
		t.Fatalf("Ended %v, Type %q", p.Ended(), p.Type())
	}
	p.SetType("VOD")
	vod, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(g["ffmpeg_media_audio.m3u8"]), "EVENT", "VOD", 1); string(vod) != want {
		t.Fatalf("as VOD:\n%s\nwant\n%s", vod, want)
	}

	u, err := ParseMedia(g["unknown_tags_media.m3u8"])
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Header) != 4 || len(u.Segments) != 2 || u.Segments[0].Title != "first" || len(u.Segments[0].After) != 1 ||
		len(u.Segments[1].Tags) != 2 || u.Segments[1].Duration != 3.5 || !u.Ended() || u.Type() != "" {
		t.Fatalf("%+v", u)
	}
	// A duration changed, or made here, is written with six decimals.
	u.Segments[1].Duration = 2
	u.Segments = append(u.Segments, Segment{Duration: 1.25, URI: "seg3.mp4"})
	out, err := u.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "#EXTINF:4,first\n") || !strings.Contains(string(out), "#EXTINF:2.000000,\nseg2.mp4\n#EXTINF:1.250000,\nseg3.mp4\n#EXT-X-ENDLIST\n") {
		t.Fatalf("wrote\n%s", out)
	}
}

// A master with an audio group and a subtitle group, built here, is
// written as RFC 8216 has it, the renditions before the variant streams
// that name their groups.
func TestBuildMasterWithSubtitles(t *testing.T) {
	m := Master{
		Header: []Tag{
			"#EXT-X-VERSION:6",
			Rendition{Type: "AUDIO", GroupID: "audio", Name: "audio_0", Default: true, AutoSelect: true, URI: "audio/index.m3u8"}.Tag(),
			Rendition{Type: "SUBTITLES", GroupID: "subs", Language: "en", Name: "English", Default: true, AutoSelect: true, URI: "subs/en/index.m3u8"}.Tag(),
			Rendition{Type: "SUBTITLES", GroupID: "subs", Language: "fr", Name: "Français", URI: "subs/fr/index.m3u8"}.Tag(),
		},
	}
	for _, v := range []struct{ bw, res, uri string }{{"1680800", "854x480", "480p/index.m3u8"}, {"580800", "428x240", "240p/index.m3u8"}} {
		a := Attrs{{"BANDWIDTH", v.bw}, {"RESOLUTION", v.res}, {"CODECS", Quote("avc1.64001e,mp4a.40.2")}, {"AUDIO", Quote("audio")}}
		m.Variants = append(m.Variants, Variant{Attrs: a.Set("SUBTITLES", Quote("subs")), URI: v.uri})
	}
	got, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	const want = `#EXTM3U
#EXT-X-VERSION:6
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="audio_0",DEFAULT=YES,AUTOSELECT=YES,URI="audio/index.m3u8"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",LANGUAGE="en",NAME="English",DEFAULT=YES,AUTOSELECT=YES,URI="subs/en/index.m3u8"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",LANGUAGE="fr",NAME="Français",DEFAULT=NO,AUTOSELECT=NO,URI="subs/fr/index.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=1680800,RESOLUTION=854x480,CODECS="avc1.64001e,mp4a.40.2",AUDIO="audio",SUBTITLES="subs"
480p/index.m3u8

#EXT-X-STREAM-INF:BANDWIDTH=580800,RESOLUTION=428x240,CODECS="avc1.64001e,mp4a.40.2",AUDIO="audio",SUBTITLES="subs"
240p/index.m3u8

`
	if string(got) != want {
		t.Fatalf("wrote\n%s\nwant\n%s", got, want)
	}
	back, err := ParseMaster(got)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := back.Renditions()
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, r := range rs {
		if typ, _ := r.Get("TYPE"); typ == "SUBTITLES" {
			lang, _ := r.Get("LANGUAGE")
			subs = append(subs, lang)
		}
	}
	if !slices.Equal(subs, []string{"en", "fr"}) {
		t.Fatalf("subtitle languages %v", subs)
	}
	if g, _ := back.Variants[1].Attrs.Get("SUBTITLES"); g != "subs" {
		t.Fatalf("SUBTITLES %q", g)
	}
}

// Hostile playlists are errors, never panics; line endings and white
// space around lines are forgiven.
func TestParseHostile(t *testing.T) {
	huge := strings.Repeat("a", 1<<20)
	tests := []struct {
		name   string
		in     string
		master bool // ParseMaster, else ParseMedia
		ok     bool
	}{
		{"empty", "", true, false},
		{"empty media", "", false, false},
		{"no header", "#EXT-X-VERSION:6\n", true, false},
		{"a BOM", "\xEF\xBB\xBF#EXTM3U\n", false, false},
		{"NUL byte", "#EXTM3U\n#EXTINF:4,\nseg\x00.ts\n", false, false},
		{"NUL in a master", "#EXTM3U\x00\n", true, false},
		{"crlf", "#EXTM3U\r\n#EXT-X-STREAM-INF:BANDWIDTH=1\r\n360p/index.m3u8\r\n", true, true},
		{"crlf media", "#EXTM3U\r\n#EXTINF:4.0,\r\nseg.ts\r\n#EXT-X-ENDLIST\r\n", false, true},
		{"blank lines first", "\n\n  #EXTM3U  \n", true, true},
		{"huge line", "#EXTM3U\n#X-" + huge + "\n", true, true},
		{"huge URI", "#EXTM3U\n#EXTINF:1,\n" + huge + "\n", false, true},
		{"huge attribute list", "#EXTM3U\n#EXT-X-STREAM-INF:" + strings.Repeat("A=1,", 1<<18) + "B=2\nx.m3u8\n", true, false},
		{"too large", "#EXTM3U\n" + strings.Repeat("#"+huge+"\n", 17), true, false},
		{"variant without URI", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n", true, false},
		{"variant before a tag", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-VERSION:6\n", true, false},
		{"URI outside a variant", "#EXTM3U\nfoo.m3u8\n", true, false},
		{"garbage attributes", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH\nx.m3u8\n", true, false},
		{"unterminated quote", "#EXTM3U\n#EXT-X-STREAM-INF:CODECS=\"avc1\nx.m3u8\n", true, false},
		{"trailing comma", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,\nx.m3u8\n", true, false},
		{"lowercase name", "#EXTM3U\n#EXT-X-STREAM-INF:bandwidth=1\nx.m3u8\n", true, false},
		{"attribute twice", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,BANDWIDTH=2\nx.m3u8\n", true, false},
		{"value after a quote", "#EXTM3U\n#EXT-X-STREAM-INF:CODECS=\"a\"b\nx.m3u8\n", true, false},
		{"garbage rendition is kept, refused when read", "#EXTM3U\n#EXT-X-MEDIA:%%%\n", true, true},
		{"segment without EXTINF", "#EXTM3U\nseg.ts\n", false, false},
		{"EXTINF without segment", "#EXTM3U\n#EXTINF:4,\n", false, false},
		{"two EXTINF", "#EXTM3U\n#EXTINF:4,\n#EXTINF:4,\nseg.ts\n", false, false},
		{"negative duration", "#EXTM3U\n#EXTINF:-1,\nseg.ts\n", false, false},
		{"NaN duration", "#EXTM3U\n#EXTINF:NaN,\nseg.ts\n", false, false},
		{"infinite duration", "#EXTM3U\n#EXTINF:Inf,\nseg.ts\n", false, false},
		{"enormous duration", "#EXTM3U\n#EXTINF:1e308,\nseg.ts\n", false, false},
		{"enormous count", "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:99999999999999999999999999\n#EXT-X-TARGETDURATION:1e400\n", false, true},
		{"duration not a number", "#EXTM3U\n#EXTINF:four,\nseg.ts\n", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rewrite := rewriteMedia
			if tt.master {
				rewrite = rewriteMaster
			}
			_, err := rewrite([]byte(tt.in))
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
		})
	}
	m, err := ParseMaster([]byte("#EXTM3U\n#EXT-X-MEDIA:%%%\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Renditions(); err == nil {
		t.Fatal("a garbage rendition read")
	}
}

// Encode refuses what would not read back as itself.
func TestEncodeRefuses(t *testing.T) {
	for name, m := range map[string]Master{
		"a tag without #":    {Header: []Tag{"EXT-X-VERSION:6"}},
		"a tag of two lines": {Header: []Tag{"#EXT-X-VERSION:6\nevil.m3u8"}},
		"an empty URI":       {Variants: []Variant{{Attrs: Attrs{{"BANDWIDTH", "1"}}}}},
		"a URI like a tag":   {Variants: []Variant{{Attrs: Attrs{{"BANDWIDTH", "1"}}, URI: "#x"}}},
		"a URI of two lines": {Variants: []Variant{{Attrs: Attrs{{"BANDWIDTH", "1"}}, URI: "a\r\nb"}}},
		"a quote in a value": {Variants: []Variant{{Attrs: Attrs{{"NAME", Quote(`a"b`)}}, URI: "x"}}},
		"a bad name":         {Variants: []Variant{{Attrs: Attrs{{"A B", "1"}}, URI: "x"}}},
	} {
		if out, err := m.Encode(); err == nil {
			t.Errorf("%s: wrote %q", name, out)
		}
	}
	for name, m := range map[string]Media{
		"a negative duration": {Segments: []Segment{{Duration: -1, URI: "a.ts"}}},
		"no URI":              {Segments: []Segment{{Duration: 1}}},
		"a tag without #":     {Trailer: []Tag{"EXT-X-ENDLIST"}},
	} {
		if out, err := m.Encode(); err == nil {
			t.Errorf("%s: wrote %q", name, out)
		}
	}
}

func TestAttrs(t *testing.T) {
	a, err := ParseAttrs(`TYPE=AUDIO,GROUP-ID="g",NAME="a, b=c",URI="x.m3u8"`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Get("NAME"); n != "a, b=c" || len(a) != 4 {
		t.Fatalf("%q", a)
	}
	if _, ok := a.Get("LANGUAGE"); ok {
		t.Fatal("LANGUAGE found")
	}
	b := a.Set("NAME", Quote("n")).Set("LANGUAGE", Quote("en"))
	if got := b.String(); got != `TYPE=AUDIO,GROUP-ID="g",NAME="n",URI="x.m3u8",LANGUAGE="en"` {
		t.Fatalf("%s", got)
	}
	if a.String() != `TYPE=AUDIO,GROUP-ID="g",NAME="a, b=c",URI="x.m3u8"` {
		t.Fatalf("Set changed its receiver: %s", a)
	}
}

func TestRewriteURIs(t *testing.T) {
	mark := func(u string) string { return "<" + u + ">" }
	tests := []struct{ in, want string }{
		{"seg.ts", "<seg.ts>"},
		{"  seg.ts \r", "<seg.ts>"},
		{"", ""},
		{"  ", "  "},
		{"# URI=\"x\"", "# URI=\"x\""},
		{"#EXTINF:4,", "#EXTINF:4,"},
		{`#EXT-X-MEDIA:TYPE=AUDIO,URI="a.m3u8"`, `#EXT-X-MEDIA:TYPE=AUDIO,URI="<a.m3u8>"`},
		{`#EXT-X-MEDIA:NAME="x,URI=y",URI="a.m3u8"`, `#EXT-X-MEDIA:NAME="x,URI=y",URI="<a.m3u8>"`},
		{`#EXT-X-MAP:URI="i.mp4",BYTERANGE="1@0"`, `#EXT-X-MAP:URI="<i.mp4>",BYTERANGE="1@0"`},
		{`#EXT-X-MEDIA:NAME="x,URI="a.m3u8`, `#EXT-X-MEDIA:NAME="x,URI="a.m3u8`},
		{`#EXT-X-MEDIA:URI="a"x,URI="b"`, `#EXT-X-MEDIA:URI="<a>"x,URI="b"`},
		{`#EXT-X-MEDIA:A=1,,URI="b"`, `#EXT-X-MEDIA:A=1,,URI="b"`},
		{`#EXT-X-MEDIA:URI=a,URI="b"`, `#EXT-X-MEDIA:URI=a,URI="<b>"`},
	}
	for _, tt := range tests {
		if got := RewriteURIs(tt.in, mark); got != tt.want {
			t.Errorf("RewriteURIs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
