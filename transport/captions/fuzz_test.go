package captions

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kino-video/kino/domain"
)

// FuzzParse reads anything: never a panic; an error is a domain error of
// an expected kind with a message; what reads writes a file whose cues are
// valid and that reads back to the same cues and writes back to the same
// bytes.
func FuzzParse(f *testing.F) {
	for _, file := range captionFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "WEBVTT", "WEBVTT\n\n00:01.000 --> 00:02.000\nx", "1\n00:00:01,000 --> 00:00:02,000\nx\n",
		"1\r00:00:01,000-->00:00:02,000\r{\\a{\\an8}n9}<i>x</i>\r2\r00:00:02,000 --> 00:00:03,000\r\r\ry",
		"WEBVTT\n00:01.000 --> 00:02.000 line:-1,end position:10%,line-left size:5.5% vertical:lr align:left\n<ruby>a<rt>b</ruby><v.loud  A &amp; B >x<lang en>y</v>",
		"00:00:01.000 --> 00:00:02.000\n&#x202E;&#0;&#60;&semi;&notit;&nbsp;&#x200F;{<b>\\an8}\t</b>",
		"WEBVTT\n\n00:00.000 --> 999999999999999999999:00:00.000\nx",
		"\xff\xfe1\x00\n\x000\x000\x00:\x000\x000\x00:\x000\x000\x00,\x000\x000\x000\x00 \x00-\x00-\x00>\x00 \x000\x000\x00:\x000\x000\x00:\x000\x001\x00,\x000\x000\x000\x00\n\x00x\x00",
		"1\n00:00:01,000 --> 00:00:02,000\n\x93quoted\x94 caf\xe9\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, _, err := Parse(data)
		if err != nil {
			switch domain.KindOf(err) {
			case domain.Invalid, domain.TooLarge, domain.Unsupported:
			default:
				t.Fatalf("error of kind %v: %v", domain.KindOf(err), err)
			}
			if domain.MessageOf(err) == "" {
				t.Fatalf("error without a message: %v", err)
			}
			return
		}
		checkTrack(t, tr)
		out := tr.WebVTT()
		if len(out) > MaxOutput {
			t.Fatalf("wrote %d bytes", len(out))
		}
		again, format, err := Parse(out)
		if err != nil {
			t.Fatalf("the file written does not read: %v\n%s", err, out)
		}
		if format != FormatWebVTT {
			t.Fatalf("the file written reads as %s", format)
		}
		if !reflect.DeepEqual(again.Cues, tr.Cues) {
			t.Fatalf("cues differ once written and read:\n%q\n%q", tr.Cues, again.Cues)
		}
		if string(again.WebVTT()) != string(out) {
			t.Fatalf("written twice differs:\n%s\n%s", out, again.WebVTT())
		}
	})
}

// checkTrack fails unless every cue of t is within the limits and its
// text is valid WebVTT cue text.
func checkTrack(t *testing.T, tr *Track) {
	t.Helper()
	if len(tr.Cues) == 0 || len(tr.Cues) > MaxCues {
		t.Fatalf("%d cues", len(tr.Cues))
	}
	for i, c := range tr.Cues {
		if c.Start < 0 || c.End <= c.Start || c.End > MaxTime || c.Start%1e6 != 0 || c.End%1e6 != 0 {
			t.Fatalf("cue %d: times %v --> %v", i, c.Start, c.End)
		}
		if i > 0 && c.Start < tr.Cues[i-1].Start {
			t.Fatalf("cue %d starts before cue %d", i, i-1)
		}
		if strings.Contains(c.Settings, "-->") || strings.ContainsAny(c.Settings, "\r\n") || c.Settings != parseSettings(c.Settings).String() {
			t.Fatalf("cue %d: settings %q", i, c.Settings)
		}
		if len(c.Text) > MaxCueText || strings.Count(c.Text, "\n") >= MaxCueLines {
			t.Fatalf("cue %d: text of %d bytes", i, len(c.Text))
		}
		if err := validCueText(c.Text); err != "" {
			t.Fatalf("cue %d: %s in %q", i, err, c.Text)
		}
	}
}

// validCueText checks text the way a strict reader of WebVTT cue text
// would, independently of cleanText; it returns what is wrong, or "".
func validCueText(text string) string {
	if !utf8.ValidString(text) {
		return "invalid UTF-8"
	}
	for line := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(line) == "" {
			return "a blank line"
		}
		if line != strings.TrimSpace(line) {
			return "white space around a line"
		}
		if strings.Contains(line, "-->") {
			return "an arrow"
		}
		for _, r := range line {
			if forbidden(r) {
				return "a forbidden character"
			}
		}
		for i := 0; i < len(line); i++ {
			switch line[i] {
			case '>':
				return "a bare '>'"
			case '&':
				j := strings.IndexByte(line[i:], ';')
				if j < 0 {
					return "a bare '&'"
				}
				switch line[i : i+j+1] {
				case "&amp;", "&lt;", "&gt;", "&nbsp;", "&lrm;", "&rlm;":
				default:
					return "an unexpected character reference"
				}
			case '<':
				j := strings.IndexByte(line[i:], '>')
				if j < 0 {
					return "a bare '<'"
				}
				if !validTag(line[i+1 : i+j]) {
					return "a tag that is not WebVTT's"
				}
				i += j
			case '{':
				if strings.HasPrefix(line[i:], `{\`) && strings.Contains(line[i:], "}") && !strings.ContainsAny(line[i:strings.Index(line[i:], "}")+i], "<>&") {
					return "an ASS code"
				}
			}
		}
	}
	return ""
}

func validTag(t string) bool {
	if name, ok := strings.CutPrefix(t, "/"); ok {
		switch name {
		case "i", "b", "u", "c", "v", "lang", "ruby", "rt":
			return true
		}
		return false
	}
	if _, rest, ok := parseTimestamp(t); ok && rest == "" {
		return len(t) == len("00:00:00.000")
	}
	head, annotation, hasAnnotation := strings.Cut(t, " ")
	name, classes, _ := strings.Cut(head, ".")
	for class := range strings.SplitSeq(classes, ".") {
		if classes != "" && !isClassName(class) {
			return false
		}
	}
	switch name {
	case "i", "b", "u", "c", "ruby", "rt":
		return !hasAnnotation
	case "v", "lang":
		return hasAnnotation && annotation != "" && !strings.ContainsAny(annotation, "<>")
	}
	return false
}
