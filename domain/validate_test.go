package domain_test

import (
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestExtension(t *testing.T) {
	tests := []struct {
		name     string
		filename string
		want     string
		err      domain.Kind
	}{
		{name: "mp4", filename: "a.mp4", want: ".mp4"},
		{name: "mov upper case", filename: "A.MOV", want: ".mov"},
		{name: "avi", filename: "a.avi", want: ".avi"},
		{name: "mkv", filename: "a.mkv", want: ".mkv"},
		{name: "webm mixed case", filename: "a.WebM", want: ".webm"},
		{name: "ogv", filename: "a.ogv", want: ".ogv"},
		{name: "flv", filename: "a.flv", want: ".flv"},
		{name: "wmv", filename: "a.wmv", want: ".wmv"},
		{name: "mpeg", filename: "a.mpeg", want: ".mpeg"},
		{name: "mpg", filename: "a.mpg", want: ".mpg"},
		{name: "3gp", filename: "a.3gp", want: ".3gp"},
		{name: "3g2", filename: "a.3G2", want: ".3g2"},
		{name: "last dot counts", filename: "a.b.c.mkv", want: ".mkv"},
		{name: "txt", filename: "a.txt", err: domain.Unsupported},
		{name: "no extension", filename: "clip", err: domain.Unsupported},
		{name: "empty", filename: "", err: domain.Unsupported},
		{name: "extension only of a dot", filename: "clip.", err: domain.Unsupported},
		{name: "mp4 without the dot", filename: "clipmp4", err: domain.Unsupported},
		{name: "gif", filename: "a.gif", err: domain.Unsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := domain.Extension(tc.filename)
			checkErr(t, "Extension("+tc.filename+")", err, tc.err)
			if got != tc.want {
				t.Fatalf("Extension(%q) = %q; want %q", tc.filename, got, tc.want)
			}
		})
	}
}

func TestExtensionMessageNamesSupportedTypes(t *testing.T) {
	_, err := domain.Extension("notes.txt")
	msg := domain.MessageOf(err)
	for _, ext := range domain.SupportedExtensions {
		if !strings.Contains(msg, ext) {
			t.Fatalf("message %q does not list %s", msg, ext)
		}
	}
	if !strings.Contains(msg, ".txt") {
		t.Fatalf("message %q does not name the rejected type", msg)
	}
}

func TestValidSlug(t *testing.T) {
	tests := []struct {
		name string
		slug string
		want bool
	}{
		{name: "letters", slug: "acme", want: true},
		{name: "digits and dashes", slug: "2026-a-b", want: true},
		{name: "trailing dash", slug: "a-", want: true},
		{name: "63 characters", slug: strings.Repeat("a", 63), want: true},
		{name: "64 characters", slug: strings.Repeat("a", 64), want: false},
		{name: "empty", slug: "", want: false},
		{name: "upper case", slug: "Acme", want: false},
		{name: "leading dash", slug: "-acme", want: false},
		{name: "underscore", slug: "ac_me", want: false},
		{name: "dot", slug: "ac.me", want: false},
		{name: "star", slug: "*", want: false},
		{name: "greater-than", slug: ">", want: false},
		{name: "non-ASCII letter", slug: "café", want: false},
		{name: "trailing newline", slug: "acme\n", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domain.ValidSlug(tc.slug); got != tc.want {
				t.Fatalf("ValidSlug(%q) = %v; want %v", tc.slug, got, tc.want)
			}
		})
	}
}

func TestDisplayFilename(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "plain", in: "clip.mp4", want: "clip.mp4"},
		{name: "unix path", in: "/home/me/clip.mp4", want: "clip.mp4"},
		{name: "windows path", in: `C:\Users\me\clip.mp4`, want: "clip.mp4"},
		{name: "parent traversal", in: "../../etc/clip.mp4", want: "clip.mp4"},
		{name: "mixed separators", in: `a/b\c.mp4`, want: "c.mp4"},
		{name: "trailing separator", in: "dir/", want: ""},
		{name: "spaces kept", in: "my clip.mp4", want: "my clip.mp4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domain.DisplayFilename(tc.in); got != tc.want {
				t.Fatalf("DisplayFilename(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

// Names, filenames and key labels refuse C0/C1 controls and the characters
// that reorder how text is displayed ("evil\u202Ekvm.mp4" shows as
// "evilpm4.mvk").
func TestNamesRefuseControlAndBidi(t *testing.T) {
	tests := []struct {
		name string
		s    string
		err  domain.Kind
	}{
		{name: "plain", s: "holiday.mp4"},
		{name: "accents and CJK", s: "été 夏.mp4"},
		{name: "right-to-left script", s: "שלום.mp4"},
		{name: "NUL", s: "a\x00b.mp4", err: domain.Invalid},
		{name: "escape", s: "a\x1b[31mb.mp4", err: domain.Invalid},
		{name: "DEL", s: "a\x7fb.mp4", err: domain.Invalid},
		{name: "C1 NEL", s: "a\u0085b.mp4", err: domain.Invalid},
		{name: "C1 CSI", s: "a\u009bb.mp4", err: domain.Invalid},
		{name: "LRE", s: "a\u202Ab.mp4", err: domain.Invalid},
		{name: "RLE", s: "a\u202Bb.mp4", err: domain.Invalid},
		{name: "PDF", s: "a\u202Cb.mp4", err: domain.Invalid},
		{name: "LRO", s: "a\u202Db.mp4", err: domain.Invalid},
		{name: "RLO", s: "evil\u202Ekvm.mp4", err: domain.Invalid},
		{name: "LRI", s: "a\u2066b.mp4", err: domain.Invalid},
		{name: "RLI", s: "a\u2067b.mp4", err: domain.Invalid},
		{name: "FSI", s: "a\u2068b.mp4", err: domain.Invalid},
		{name: "PDI", s: "a\u2069b.mp4", err: domain.Invalid},
		{name: "LRM", s: "a\u200Eb.mp4", err: domain.Invalid},
		{name: "RLM", s: "a\u200Fb.mp4", err: domain.Invalid},
		{name: "ALM", s: "a\u061Cb.mp4", err: domain.Invalid},
		{name: "line separator", s: "a\u2028b.mp4", err: domain.Invalid},
		{name: "zero-width space", s: "a\u200Bb.mp4", err: domain.Invalid},
		{name: "zero-width joiner", s: "a\u200Db.mp4", err: domain.Invalid},
		{name: "byte order mark", s: "\uFEFFa.mp4", err: domain.Invalid},
		{name: "word joiner", s: "a\u2060b.mp4", err: domain.Invalid},
		{name: "Mongolian vowel separator", s: "a\u180Eb.mp4", err: domain.Invalid},
		{name: "combining grapheme joiner", s: "a\u034Fb.mp4", err: domain.Invalid},
		{name: "soft hyphen", s: "a\u00ADb.mp4", err: domain.Invalid},
		{name: "interlinear annotation", s: "a\uFFF9b.mp4", err: domain.Invalid},
		{name: "noncharacter", s: "a\uFFFEb.mp4", err: domain.Invalid},
		{name: "tag character", s: "a\U000E0041b.mp4", err: domain.Invalid},
		{name: "Hangul filler only", s: "\u3164\u3164.mp4", err: domain.Invalid},
		{name: "emoji with a variation selector", s: "\u2764\uFE0F.mp4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, "CheckFilename", domain.CheckFilename(tc.s), tc.err)
			_, err := domain.Collection{}.Decide(domain.CreateCollection{Account: "acme", Slug: "main", Name: tc.s}, now)
			checkErr(t, "CreateCollection", err, tc.err)
			coll := given[domain.Collection](t, "acme/main", domain.CollectionCreated{Account: "acme", Slug: "main", Name: "Main"})
			_, err = coll.Decide(domain.RenameCollection{Account: "acme", Name: tc.s}, now)
			checkErr(t, "RenameCollection", err, tc.err)
			acct := given[domain.Account](t, "acme", acmeFree)
			_, err = acct.Decide(domain.IssueKey{KeyID: "k", Hash: strings.Repeat("a", 64), Label: tc.s}, now)
			checkErr(t, "IssueKey", err, tc.err)
		})
	}
}
