package seal_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/transport/seal"
)

func TestSealOpensOnlyWithItsKeyAndID(t *testing.T) {
	dir := t.TempDir()
	k, err := seal.LoadOrCreate(filepath.Join(dir, seal.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	other, err := seal.LoadOrCreate(filepath.Join(t.TempDir(), seal.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "whsec_0123456789abcdef0123456789abcdef"
	sealed, err := k.Seal("hookA", secret)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, secret) || strings.Contains(sealed, "0123456789abcdef") {
		t.Fatalf("sealed value shows the secret: %s", sealed)
	}
	if again, _ := k.Seal("hookA", secret); again == sealed {
		t.Fatal("two seals of one secret are equal: the nonce repeats")
	}
	if got, err := k.Open("hookA", sealed); err != nil || got != secret {
		t.Fatalf("open = %q, %v", got, err)
	}
	flipped := []byte(sealed)
	flipped[len(flipped)-3] ^= 1
	tests := []struct {
		name, id, sealed string
		key              *seal.Key
	}{
		{"another webhook's id", "hookB", sealed, k},
		{"another key", "hookA", sealed, other},
		{"altered", "hookA", string(flipped), k},
		{"a clear secret", "hookA", secret, k},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := tt.key.Open(tt.id, tt.sealed); !errors.Is(err, seal.ErrOpen) {
				t.Fatalf("opened: %q, %v", got, err)
			}
		})
	}
}

func TestKeyFileIsGeneratedOnceAndPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), seal.KeyFile)
	k1, err := seal.LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode(), err)
	}
	before, _ := os.ReadFile(path)
	k2, err := seal.LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("key file rewritten")
	}
	sealed, _ := k1.Seal("id", "s3cret")
	if got, err := k2.Open("id", sealed); err != nil || got != "s3cret" {
		t.Fatalf("reloaded key: %q, %v", got, err)
	}
	// The same key given as KINO_SECRET_KEY (base64 as in the file, or hex).
	k3, err := seal.Parse(string(before))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k3.Open("id", sealed); err != nil || got != "s3cret" {
		t.Fatalf("parsed key: %q, %v", got, err)
	}
	for _, bad := range []string{"", "short", strings.Repeat("ab", 31)} {
		if _, err := seal.Parse(bad); err == nil {
			t.Fatalf("parsed %q", bad)
		}
	}
}

func TestDeriveIsStablePerKeyAndPurpose(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	a, err := seal.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := seal.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	other, err := seal.New(bytes.Repeat([]byte{8}, 32))
	if err != nil {
		t.Fatal(err)
	}
	tok := a.Derive("playback-token")
	if len(tok) != 32 {
		t.Fatalf("derived %d bytes, want 32", len(tok))
	}
	if !bytes.Equal(tok, b.Derive("playback-token")) {
		t.Error("the same key derives another key for the same purpose (nodes sharing KINO_SECRET_KEY would disagree)")
	}
	if bytes.Equal(tok, a.Derive("other")) {
		t.Error("two purposes derive the same key")
	}
	if bytes.Equal(tok, other.Derive("playback-token")) {
		t.Error("two secret keys derive the same key")
	}
	if bytes.Equal(tok, raw) {
		t.Error("Derive returned the secret key itself")
	}
}
