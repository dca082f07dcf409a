// Package seal keeps secrets that kino must store but must not store in
// clear (webhook signing secrets): AES-256-GCM with a key kept outside the
// event stream and the read models, the ciphertext bound to the id of what
// it belongs to, so a sealed value copied onto another webhook does not
// open.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeyFile is the key's file name in the data directory; EnvKey names the
// environment variable that gives the key instead (base64 or hex of 32
// bytes).
const (
	KeyFile = "secret.key"
	EnvKey  = "KINO_SECRET_KEY"
)

// prefix marks a sealed value and its format.
const prefix = "sealed.v1."

// Key seals and opens secrets, and derives keys for other purposes.
type Key struct {
	aead cipher.AEAD
	raw  []byte // for Derive only
}

// New makes a key of 32 random-looking bytes.
func New(raw []byte) (*Key, error) {
	if len(raw) != 32 {
		return nil, fmt.Errorf("secret key: want 32 bytes, got %d", len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Key{aead: aead, raw: append([]byte(nil), raw...)}, nil
}

// Derive is a 32-byte key for purpose (HKDF-SHA256 of the secret key, the
// purpose as its info): the same on every node sharing the secret key,
// and telling nothing of the key itself or of another purpose's key. The
// sealing key is used for sealing only; everything else derives its own.
func (k *Key) Derive(purpose string) []byte {
	b, err := hkdf.Key(sha256.New, k.raw, nil, "kino "+purpose, 32)
	if err != nil { // only for lengths HKDF cannot give
		panic(err)
	}
	return b
}

// Parse reads a key written as base64 (standard or URL, padded or not) or
// hex of 32 bytes.
func Parse(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	for _, dec := range []func(string) ([]byte, error){
		hex.DecodeString, base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString,
	} {
		if raw, err := dec(s); err == nil && len(raw) == 32 {
			return New(raw)
		}
	}
	return nil, errors.New("secret key: want base64 or hex of 32 bytes")
}

// Load reads the key file at path.
func Load(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	k, err := Parse(string(b))
	clear(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// LoadOrCreate reads the key file at path, generating it (random, mode
// 0600) when it does not exist yet.
func LoadOrCreate(path string) (*Key, error) {
	k, err := Load(path)
	if !errors.Is(err, os.ErrNotExist) {
		return k, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process made it first
		return Load(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return New(raw)
}

func aad(id string) []byte { return []byte("kino secret\x00" + id) }

// Seal encrypts secret for the owner id.
func (k *Key) Seal(id, secret string) (string, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(secret)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(k.aead.Seal(nonce, nonce, []byte(secret), aad(id))), nil
}

// ErrOpen means a sealed value does not open with this key for this id:
// another key, another id, or altered bytes.
var ErrOpen = errors.New("sealed secret does not open with this key")

// Open decrypts what Seal returned for the same id.
func (k *Key) Open(id, sealed string) (string, error) {
	rest, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return "", fmt.Errorf("%w: not a sealed value", ErrOpen)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b) < k.aead.NonceSize() {
		return "", fmt.Errorf("%w: malformed", ErrOpen)
	}
	n := k.aead.NonceSize()
	clearText, err := k.aead.Open(nil, b[:n], b[n:], aad(id))
	if err != nil {
		return "", ErrOpen
	}
	return string(clearText), nil
}
