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
