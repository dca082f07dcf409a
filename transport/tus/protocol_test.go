package tus_test

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/tus"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseMetadata(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string // nil: refused as Invalid
	}{
		{name: "empty", in: " ", want: map[string]string{}},
		{name: "pairs", in: "filename " + b64("a.mp4") + ", flag", want: map[string]string{"filename": "a.mp4", "flag": ""}},
		{name: "duplicate key", in: "a " + b64("x") + ",a " + b64("y")},
		{name: "not base64", in: "a !!"},
		{name: "empty key", in: ", a " + b64("x")},
		{name: "too long", in: "a " + strings.Repeat("A", tus.MaxMetadata)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tus.ParseMetadata(tc.in)
			if tc.want == nil {
				if domain.KindOf(err) != domain.Invalid {
					t.Fatalf("got %v, %v; want an Invalid error", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("%s: got %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestParseChecksum(t *testing.T) {
	sum := sha256.Sum256([]byte("chunk"))
	c, err := tus.ParseChecksum("sha256 " + base64.StdEncoding.EncodeToString(sum[:]))
	if err != nil || c.Algorithm != "sha256" {
		t.Fatalf("%+v, %v", c, err)
	}
	_, _ = c.Write([]byte("chunk"))
	if !c.Matches() {
		t.Fatal("the right chunk does not match")
	}
	c, _ = tus.ParseChecksum("sha256 " + base64.StdEncoding.EncodeToString(sum[:]))
	_, _ = c.Write([]byte("other"))
	if c.Matches() {
		t.Fatal("another chunk matches")
	}
	if c, err := tus.ParseChecksum(""); c != nil || err != nil {
		t.Fatalf("no header: %v, %v", c, err)
	}
	for _, bad := range []string{"crc32 AAAA", "sha256 " + b64("short"), "sha256"} {
		if _, err := tus.ParseChecksum(bad); domain.KindOf(err) != domain.Invalid {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}
