package tus

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"strings"

	"github.com/kino-video/kino/domain"
)

// What kino's tus server speaks (tus 1.0: core, creation,
// creation-with-upload, termination, expiration, checksum).
const (
	Version     = "1.0.0"
	Extensions  = "creation,creation-with-upload,termination,expiration,checksum"
	Checksums   = "sha1,md5,sha256,sha512"
	ContentType = "application/offset+octet-stream" // of a PATCH's body

	// MaxMetadata bounds the Upload-Metadata header: room for a video's
	// whole details (a description of 5,000 characters, 20 metadata
	// values of 500) in base64.
	MaxMetadata = 64 << 10
)

func invalid(format string, args ...any) error {
	return domain.E("", domain.Invalid, format, args...)
}

// Checksum is a chunk's Upload-Checksum being verified: write the chunk
// to it, then ask whether it Matches.
type Checksum struct {
	Algorithm string
	hash.Hash
	want []byte
}

// Matches reports whether what was written has the digest the client sent.
func (c *Checksum) Matches() bool { return subtle.ConstantTimeCompare(c.Sum(nil), c.want) == 1 }

// ParseChecksum reads "Upload-Checksum: <algorithm> <base64>"; nil
// when there is none.
func ParseChecksum(v string) (*Checksum, error) {
	if v == "" {
		return nil, nil
	}
	alg, enc, ok := strings.Cut(strings.TrimSpace(v), " ")
	var h hash.Hash
	switch alg {
	case "sha1":
		h = sha1.New()
	case "md5":
		h = md5.New()
	case "sha256":
		h = sha256.New()
	case "sha512":
		h = sha512.New()
	default:
		return nil, invalid("Upload-Checksum: unsupported algorithm %q (supported: %s)", alg, Checksums)
	}
	want, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if !ok || err != nil || len(want) != h.Size() {
		return nil, invalid("Upload-Checksum must be \"%s <base64 of the %d-byte digest>\"", alg, h.Size())
	}
	return &Checksum{Algorithm: alg, Hash: h, want: want}, nil
}

// ParseMetadata reads Upload-Metadata: comma-separated pairs of a
// key and a base64 value (the value may be left out).
func ParseMetadata(v string) (map[string]string, error) {
	meta := make(map[string]string)
	if strings.TrimSpace(v) == "" {
		return meta, nil
	}
	if len(v) > MaxMetadata {
		return nil, invalid("Upload-Metadata must be at most %d bytes", MaxMetadata)
	}
	for pair := range strings.SplitSeq(v, ",") {
		key, val, _ := strings.Cut(strings.TrimSpace(pair), " ")
		if key == "" || strings.ContainsAny(key, " \t") {
			return nil, invalid("Upload-Metadata is malformed: want comma-separated \"key base64value\" pairs")
		}
		if _, dup := meta[key]; dup {
			return nil, invalid("Upload-Metadata has key %q twice", key)
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val))
		if err != nil {
			return nil, invalid("Upload-Metadata value of %q is not base64", key)
		}
		meta[key] = string(b)
	}
	return meta, nil
}
