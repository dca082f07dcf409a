package captions

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// parseVTT parses in and returns the WebVTT written without its
// signature line, failing the test on an error.
func parseVTT(t *testing.T, in string, format Format) string {
	t.Helper()
	tr, got, err := Parse([]byte(in))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got != format {
		t.Errorf("format %q, want %q", got, format)
	}
	checkTrack(t, tr)
	out, ok := strings.CutPrefix(string(tr.WebVTT()), "WEBVTT\n\n")
	if !ok {
		t.Fatalf("written without its signature: %q", tr.WebVTT())
	}
	return out
}

func TestParseSRT(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "plain",
			in:   "1\n00:00:01,000 --> 00:00:02,500\nHello there.\n\n2\n00:00:03,000 --> 00:00:04,000\nGeneral Kenobi!\n",
			want: "00:00:01.000 --> 00:00:02.500\nHello there.\n\n00:00:03.000 --> 00:00:04.000\nGeneral Kenobi!\n\n",
		},
		{
			name: "byte order mark, CRLF, trailing white space, no final newline",
			in:   "\ufeff1 \r\n00:00:01,000 --> 00:00:02,000  \r\nLine one   \r\nLine two\t\r\n\r\n2\r\n00:00:03,000 --> 00:00:04,000\r\nLast",
			want: "00:00:01.000 --> 00:00:02.000\nLine one\nLine two\n\n00:00:03.000 --> 00:00:04.000\nLast\n\n",
		},
		{
			name: "lone CR line endings",
			in:   "1\r00:00:01,000 --> 00:00:02,000\rOld Mac\r\r",
			want: "00:00:01.000 --> 00:00:02.000\nOld Mac\n\n",
		},
		{
			name: "many blank lines and white space only lines between cues",
			in:   "\n\n1\n00:00:01,000 --> 00:00:02,000\nA\n \t \n\n\n2\n00:00:03,000 --> 00:00:04,000\nB\n\n\n\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n00:00:03.000 --> 00:00:04.000\nB\n\n",
		},
		{
			name: "missing and wrong cue numbers",
			in:   "00:00:01,000 --> 00:00:02,000\nA\n\n7\n00:00:03,000 --> 00:00:04,000\nB\n\n#3\n00:00:05,000 --> 00:00:06,000\nC\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n00:00:03.000 --> 00:00:04.000\nB\n\n00:00:05.000 --> 00:00:06.000\nC\n\n",
		},
		{
			name: "no blank line between cues",
			in:   "1\n00:00:01,000 --> 00:00:02,000\nA\n2\n00:00:03,000 --> 00:00:04,000\nB\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n00:00:03.000 --> 00:00:04.000\nB\n\n",
		},
		{
			name: "a blank line inside a cue's text",
			in:   "1\n00:00:01,000 --> 00:00:02,000\nFirst half\n\nsecond half\n\n2\n00:00:03,000 --> 00:00:04,000\nB\n",
			want: "00:00:01.000 --> 00:00:02.000\nFirst half\nsecond half\n\n00:00:03.000 --> 00:00:04.000\nB\n\n",
		},
		{
			name: "a stray cue number",
			in:   "1\n00:00:01,000 --> 00:00:02,000\nA\n\n2\n\n3\n00:00:03,000 --> 00:00:04,000\nB\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n00:00:03.000 --> 00:00:04.000\nB\n\n",
		},
		{
			name: "dot milliseconds, short hours, no hours, short fractions, no spaces around the arrow",
			in:   "1\n00:00:01.000 --> 0:00:02.5\nA\n\n2\n1:02:03,04-->01:02:04,000\nB\n\n3\n59:58,000 --> 59:59,999\nC\n",
			want: "00:00:01.000 --> 00:00:02.500\nA\n\n00:59:58.000 --> 00:59:59.999\nC\n\n01:02:03.040 --> 01:02:04.000\nB\n\n",
		},
		{
			name: "two files joined, the second with its byte order mark",
			in:   "1\n00:00:01,000 --> 00:00:02,000\nA\n\n\ufeff00:00:03,000 --> 00:00:04,000\nB\n\n\ufeff1\n00:00:05,000 --> 00:00:06,000\nC\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n00:00:03.000 --> 00:00:04.000\nB\n\n00:00:05.000 --> 00:00:06.000\nC\n\n",
		},
		{
			name: "position coordinates after the timing",
			in:   "1\n00:00:01,000 --> 00:00:02,000  X1:100 X2:600 Y1:50 Y2:80\nA\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n",
		},
		{
			name: "styling tags kept, font dropped, upper case tags",
			in:   "1\n00:00:01,000 --> 00:00:02,000\n<i>Italic</i> <b>bold</b> <u>under</u>\n<font color=\"#ffff00\">Yellow</font> <I>shout</I>\n",
			want: "00:00:01.000 --> 00:00:02.000\n<i>Italic</i> <b>bold</b> <u>under</u>\nYellow <i>shout</i>\n\n",
		},
		{
			name: "ASS codes dropped, an8 at the top",
			in:   "1\n00:00:01,000 --> 00:00:02,000\n{\\an8}{\\i1}Top{\\i0}\n\n2\n00:00:03,000 --> 00:00:04,000\n{\\an2}Bottom\n",
			want: "00:00:01.000 --> 00:00:02.000 line:0\nTop\n\n00:00:03.000 --> 00:00:04.000\nBottom\n\n",
		},
		{
			name: "Windows-1252",
			in:   "1\n00:00:01,000 --> 00:00:02,000\n\x93Caf\xe9\x94 \x96 na\xefve \x80\n",
			want: "00:00:01.000 --> 00:00:02.000\n“Café” – naïve €\n\n",
		},
		{
			name: "zero length and reversed cues dropped",
			in:   "1\n00:00:01,000 --> 00:00:01,000\nZero\n\n2\n00:00:05,000 --> 00:00:04,000\nBackwards\n\n3\n00:00:06,000 --> 00:00:07,000\nKept\n",
			want: "00:00:06.000 --> 00:00:07.000\nKept\n\n",
		},
		{
			name: "cues without text dropped",
			in:   "1\n00:00:01,000 --> 00:00:02,000\n\n2\n00:00:03,000 --> 00:00:04,000\n<font color=red></font>\n\n3\n00:00:05,000 --> 00:00:06,000\nKept\n",
			want: "00:00:05.000 --> 00:00:06.000\nKept\n\n",
		},
		{
			name: "overlapping cues kept and sorted by start, equal starts in file order",
			in:   "1\n00:00:05,000 --> 00:00:08,000\nLate\n\n2\n00:00:01,000 --> 00:00:06,000\nEarly\n\n3\n00:00:01,000 --> 00:00:02,000\nEarly too\n",
			want: "00:00:01.000 --> 00:00:06.000\nEarly\n\n00:00:01.000 --> 00:00:02.000\nEarly too\n\n00:00:05.000 --> 00:00:08.000\nLate\n\n",
		},
		{
			name: "ten hours is fine",
			in:   "1\n10:00:00,000 --> 10:00:02,000\nLate night\n",
			want: "10:00:00.000 --> 10:00:02.000\nLate night\n\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseVTT(t, tc.in, FormatSRT); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestParseWebVTT(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "plain",
			in:   "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHello\n",
			want: "00:00:01.000 --> 00:00:02.000\nHello\n\n",
		},
		{
			name: "header text, header lines, byte order mark, CRLF",
			in:   "\ufeffWEBVTT - Episode 1\r\nKind: captions\r\nLanguage: en\r\n\r\n00:01.000 --> 00:02.000\r\nHi\r\n",
			want: "00:00:01.000 --> 00:00:02.000\nHi\n\n",
		},
		{
			name: "tab after the signature",
			in:   "WEBVTT\tfile\n\n00:01.000 --> 00:02.000\nHi",
			want: "00:00:01.000 --> 00:00:02.000\nHi\n\n",
		},
		{
			name: "NOTE, STYLE and REGION blocks and cue identifiers skipped",
			in: "WEBVTT\n\nREGION\nid:fred\nwidth:40%\n\nSTYLE\n::cue { color: red }\n\nNOTE a comment\nover two lines\n\n" +
				"intro\n00:00:01.000 --> 00:00:02.000 region:fred\nOne\n\nNOTE\nanother\n\n2\n00:00:03.000 --> 00:00:04.000\nTwo\n",
			want: "00:00:01.000 --> 00:00:02.000\nOne\n\n00:00:03.000 --> 00:00:04.000\nTwo\n\n",
		},
		{
			name: "settings validated, ordered, unknown ones dropped",
			in: "WEBVTT\n\n00:01.000 --> 00:02.000 align:middle size:50% line:-2 bogus:1 vertical:rl position:10%,line-left region:r\nA\n\n" +
				"00:03.000 --> 00:04.000 line:120% position:20 size:101% align:top vertical:x\nB\n\n" +
				"00:05.000 --> 00:06.000 line:10%,end align:start line:90%\nC\n",
			want: "00:00:01.000 --> 00:00:02.000 vertical:rl line:-2 position:10%,line-left size:50% align:center\nA\n\n" +
				"00:00:03.000 --> 00:00:04.000\nB\n\n" +
				"00:00:05.000 --> 00:00:06.000 line:90% align:start\nC\n\n",
		},
		{
			name: "an arrow ends the text and starts the next cue",
			in:   "WEBVTT\n\n00:01.000 --> 00:02.000\nA\n00:03.000 --> 00:04.000\nB\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n00:00:03.000 --> 00:00:04.000\nB\n\n",
		},
		{
			name: "a white space line ends the cue, text after it is skipped",
			in:   "WEBVTT\n\n00:01.000 --> 00:02.000\nA\n   \nstray text\n\n00:03.000 --> 00:04.000\nB\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n00:00:03.000 --> 00:00:04.000\nB\n\n",
		},
		{
			name: "a cue right after the signature",
			in:   "WEBVTT\n00:01.000 --> 00:02.000\nA\n",
			want: "00:00:01.000 --> 00:00:02.000\nA\n\n",
		},
		{
			name: "WebVTT tags kept",
			in: "WEBVTT\n\n00:01.000 --> 00:05.000\n<v.loud Esme Weatherwax>Oi!</v> <c.yellow.bg_black>warn</c> <lang en-GB>colour</lang>\n" +
				"<ruby>漢<rt>kan</rt></ruby> <00:02.000>late <00:00:03.000>later\n",
			want: "00:00:01.000 --> 00:00:05.000\n<v.loud Esme Weatherwax>Oi!</v> <c.yellow.bg_black>warn</c> <lang en-GB>colour</lang>\n" +
				"<ruby>漢<rt>kan</rt></ruby> <00:00:02.000>late <00:00:03.000>later\n\n",
		},
		{
			name: "UTF-16 little endian",
			in:   utf16("WEBVTT\n\n00:01.000 --> 00:02.000\nÉté\n", false),
			want: "00:00:01.000 --> 00:00:02.000\nÉté\n\n",
		},
		{
			name: "UTF-16 big endian",
			in:   utf16("WEBVTT\r\n\r\n00:01.000 --> 00:02.000\r\nΣ ☃\r\n", true),
			want: "00:00:01.000 --> 00:00:02.000\nΣ ☃\n\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseVTT(t, tc.in, FormatWebVTT); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// utf16 encodes s (of the basic plane) as UTF-16 after a byte order
// mark.
func utf16(s string, bigEndian bool) string {
	var b []byte
	for _, r := range "\ufeff" + s {
		if r > 0xFFFF {
			panic("outside the basic plane")
		}
		if bigEndian {
			b = append(b, byte(r>>8), byte(r))
		} else {
			b = append(b, byte(r), byte(r>>8))
		}
	}
	return string(b)
}

func TestCleanText(t *testing.T) {
	tests := []struct {
		name string
		in   string // one cue's text
		want string
	}{
		{"bare markup escaped", "Tom & Jerry: 1 < 2 > 0", "Tom &amp; Jerry: 1 &lt; 2 &gt; 0"},
		{"references kept or decoded", "&amp; &lt;&gt; &nbsp;x &lrm;&rlm; &eacute; &#233; &#xE9; &AMP;", "&amp; &lt;&gt; &nbsp;x &lrm;&rlm; é é é &amp;"},
		{"unknown references escaped", "&bogus; &notit; &#; &#x; &#99999999; & amp;", "&amp;bogus; &amp;notit; &amp;#; &amp;#x; &amp;#99999999; &amp; amp;"},
		{"unknown tags dropped, text kept", "<script>alert(1)</script> <span class=x>s</span> <br/>end", "alert(1) s end"},
		{"tag annotations dropped except on v and lang", "<i title=x>a</i> <v>no voice</v> <lang>no language</lang>", "<i>a</i> no voice no language"},
		{"voice annotation escaped", "<v  Tom & <Jerry>hi", "<v Tom &amp; &lt;Jerry>hi"},
		{"unmatched end tags dropped", "</i>a<b>b</i>c</b>", "a<b>bc</b>"},
		{"unclosed tags stay open", "<i>a\n<b>b", "<i>a\n<b>b"},
		{"rt only inside ruby", "<rt>x</rt><ruby>a<rt>b</ruby>", "x<ruby>a<rt>b</ruby>"},
		{"bad timestamps dropped", "<00:01.5>a<99:99.999>b<3 you>c<00:00:01.000x>d", "<00:00:01.500>abcd"},
		{"a tag that would make an arrow dropped", "<c.a-->x <v a-->y", "x y"},
		{"a bare arrow escaped", "a --> b", "a --&gt; b"},
		{"control characters dropped, tab to space", "a\x01b\x7fc\u0085d\te\u200bf", "abcd e\u200bf"},
		{"bidi overrides and isolates dropped", "\u202eevil\u202c \u2066iso\u2069 \u200fmark", "evil iso \u200fmark"},
		{"references to forbidden characters dropped", "a&#x202E;b&#0;c&#9;d&#x2067;e", "ab\ufffdcde"},
		{"a line left empty is dropped", "<font color=red></font>\n{\\an8}\nreal\n\u202e", "real"},
		{"nested ASS codes and codes formed by a dropped tag", "{\\a{\\b}c}x{<y>\\pos(1,2)}z", "xz"},
		{"braces that are not ASS kept", "{note} {\\ <i>}", "{note} {\\ <i>}"},
		{"a reference does not make an ASS code", "{&#92;an8}x", "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := cleanText(strings.Split(tc.in, "\n"))
			if got != tc.want {
				t.Errorf("cleanText(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if err := validCueText(got); err != "" {
				t.Errorf("%s in %q", err, got)
			}
			if again, _ := cleanText(strings.Split(got, "\n")); again != got {
				t.Errorf("cleaned twice: %q, once: %q", again, got)
			}
		})
	}
}

func TestCleanTextDeepNesting(t *testing.T) {
	in := strings.Repeat("<i>", 200) + "deep" + strings.Repeat("</i>", 200)
	got, _ := cleanText([]string{in})
	want := strings.Repeat("<i>", maxDepth) + "deep" + strings.Repeat("</i>", maxDepth)
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	cue := func(text string) string { return "1\n00:00:01,000 --> 00:00:02,000\n" + text + "\n" }
	tests := []struct {
		name string
		in   string
		kind domain.Kind
		msg  string
	}{
		{"empty", "", domain.Unsupported, "not a WebVTT or SRT file"},
		{"plain text", "Dear diary,\ntoday I uploaded a file.\n", domain.Unsupported, "not a WebVTT or SRT file"},
		{"PNG", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", domain.Unsupported, "not a WebVTT or SRT file"},
		{"MP4", "\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2avc1mp41", domain.Unsupported, "not a WebVTT or SRT file"},
		{"NUL in text", cue("a\x00b"), domain.Unsupported, "not a WebVTT or SRT file"},
		{"a WebVTT file without cues", "WEBVTT\n\nNOTE nothing here\n", domain.Invalid, "the file holds no cues"},
		{"only zero length cues", "1\n00:00:01,000 --> 00:00:01,000\nx\n", domain.Invalid, "the file holds no cues"},
		{"broken arrow", "1\n00:00:01,000 -> 00:00:02\nHi\n", domain.Invalid, `line 2: "00:00:01,000 -> 00:00:02" is not a cue timing`},
		{"broken timing first", "00:00:01 --> 00:00:02\nHi\n", domain.Invalid, `line 1: "00:00:01 --> 00:00:02" is not a cue timing`},
		{"broken later timing", cue("A") + "\n2\n00:00:03,000 --> 00:00:04,0000\nB\n", domain.Invalid, "line 6:"},
		{"minutes past 59", "1\n00:60:00,000 --> 00:61:00,000\nx\n", domain.Invalid, "line 2:"},
		{"broken WebVTT timing", "WEBVTT\n\nid\n00:01.000 --> soon\nx\n", domain.Invalid, `line 4: "00:01.000 --> soon" is not a cue timing`},
		{"past 24 hours", "1\n99:59:59,000 --> 99:59:59,500\nx\n", domain.Invalid, "line 2: \"99:59:59,000 --> 99:59:59,500\": a cue may not start or end after 24:00:00.000"},
		{"hours that overflow", "WEBVTT\n\n00:01.000 --> 99999999999999999999999999:00:00.000\nx\n", domain.Invalid, "a cue may not start or end after 24:00:00.000"},
		{"text too long", cue(strings.Repeat("a", MaxCueText+1)), domain.Invalid, "the cue at line 2 has 1001 bytes of text once written as WebVTT; at most 1000 are allowed"},
		{"text escaped too long", cue(strings.Repeat("&", MaxCueText/5+1)), domain.Invalid, "the cue at line 2 has 1005 bytes of text"},
		{"raw text far too long", cue(strings.Repeat("<x>", 2000)), domain.Invalid, "the cue at line 2 has more than 1000 bytes of text"},
		{"a WebVTT cue of a million lines", "WEBVTT\n\n00:01.000 --> 00:02.000\n" + strings.Repeat("x\n", 1_000_000), domain.Invalid, "the cue at line 3 has more than 1000 bytes of text"},
		{"an SRT cue of many blocks", cue("A") + strings.Repeat("\nmore\n", 100_000), domain.Invalid, "the cue at line 2 has more than 1000 bytes of text"},
		{"too many lines", cue(strings.Repeat("line\n", MaxCueLines+1)), domain.Invalid, "the cue at line 2 has 9 lines of text; at most 8 are allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if k := domain.KindOf(err); k != tc.kind {
				t.Errorf("kind %v, want %v (%v)", k, tc.kind, err)
			}
			if msg := domain.MessageOf(err); !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q, want it to hold %q", msg, tc.msg)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	t.Run("input past MaxInput is refused unread", func(t *testing.T) {
		for _, n := range []int{MaxInput + 1, 50 << 20} {
			_, _, err := Parse(make([]byte, n))
			if !domain.IsKind(err, domain.TooLarge) {
				t.Errorf("%d bytes: %v, want TooLarge", n, err)
			}
		}
	})
	t.Run("a file of MaxInput bytes reads", func(t *testing.T) {
		in := []byte("WEBVTT\n\n00:01.000 --> 00:02.000\nfits\n")
		in = append(in, bytes.Repeat([]byte{'\n'}, MaxInput-len(in))...)
		tr, _, err := Parse(in)
		if err != nil || len(tr.Cues) != 1 {
			t.Fatalf("%v", err)
		}
	})
	t.Run("more than MaxCues cues", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("WEBVTT\n\n")
		for i := range 100_000 {
			fmt.Fprintf(&b, "%s --> %s\nx\n\n", appendTimestamp(nil, time.Duration(i)*time.Second), appendTimestamp(nil, time.Duration(i)*time.Second+time.Millisecond))
		}
		_, _, err := Parse([]byte(b.String()[:min(b.Len(), MaxInput)]))
		if !domain.IsKind(err, domain.TooLarge) || !strings.Contains(domain.MessageOf(err), "more than 10000 cues") {
			t.Errorf("%v, want TooLarge about the cues", err)
		}
	})
	t.Run("MaxCues cues read", func(t *testing.T) {
		var b strings.Builder
		for i := range MaxCues {
			fmt.Fprintf(&b, "%s --> %s\nx\n\n", appendTimestamp(nil, time.Duration(i)*time.Second), appendTimestamp(nil, time.Duration(i)*time.Second+time.Millisecond))
		}
		tr, _, err := Parse([]byte(b.String()))
		if err != nil || len(tr.Cues) != MaxCues {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a single line of 2 MiB", func(t *testing.T) {
		for _, in := range []string{
			strings.Repeat("<i", MaxInput/2),
			"1\n00:00:01,000 --> 00:00:02,000\n" + strings.Repeat("<&", MaxInput/2-20),
			"WEBVTT " + strings.Repeat("x", MaxInput-7),
		} {
			_, _, err := Parse([]byte(in))
			if err == nil {
				t.Error("no error")
			}
		}
	})
	t.Run("cues past MaxOutput once escaped", func(t *testing.T) {
		var b strings.Builder
		for i := range 8000 {
			fmt.Fprintf(&b, "%s --> %s\n%s\n\n", appendTimestamp(nil, time.Duration(i)*time.Second), appendTimestamp(nil, time.Duration(i)*time.Second+time.Millisecond), strings.Repeat("&", 190))
		}
		if b.Len() > MaxInput {
			t.Fatalf("the input is %d bytes", b.Len())
		}
		_, _, err := Parse([]byte(b.String()))
		if !domain.IsKind(err, domain.TooLarge) || !strings.Contains(domain.MessageOf(err), "once written as WebVTT") {
			t.Errorf("%v, want TooLarge about the output", err)
		}
	})
	t.Run("a cue at MaxTime", func(t *testing.T) {
		tr, _, err := Parse([]byte("1\n23:59:59,000 --> 24:00:00,000\nlast\n"))
		if err != nil || tr.End() != MaxTime {
			t.Fatalf("%v", err)
		}
	})
}

func TestEnd(t *testing.T) {
	tr, _, err := Parse([]byte("WEBVTT\n\n00:01.000 --> 00:09.000\nlong\n\n00:02.000 --> 00:03.500\nshort\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.End(); got != 9*time.Second {
		t.Errorf("End() = %v, want 9s", got)
	}
	if got := (&Track{}).End(); got != 0 {
		t.Errorf("End() of no cues = %v", got)
	}
}

func TestCueFields(t *testing.T) {
	tr, _, err := Parse([]byte("WEBVTT\n\n01:02.003 --> 01:04.5 align:end line:0\n <b>A</b> \n B \n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Cue{Start: time.Minute + 2003*time.Millisecond, End: time.Minute + 4500*time.Millisecond, Settings: "line:0 align:end", Text: "<b>A</b>\nB"}
	if len(tr.Cues) != 1 || tr.Cues[0] != want {
		t.Errorf("got %+v, want %+v", tr.Cues, want)
	}
}
