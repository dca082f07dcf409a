package accounts

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Argon2Params are the cost of a password hash. Memory is in KiB.
type Argon2Params struct {
	Memory  uint32
	Time    uint32
	Threads uint8
}

// DefaultArgon2 is OWASP's first recommended argon2id configuration:
// 46 MiB, one pass, one lane. A guesser pays that memory for every guess
// (memory is what a GPU or ASIC cannot add cheaply); a login costs the
// server about 0.05 to 0.1 s of one core, and MaxHashing (4) at once
// stay within 184 MiB.
var DefaultArgon2 = Argon2Params{Memory: 46 * 1024, Time: 1, Threads: 1}

// Bounds on the parameters a stored hash may claim: a hash is only ever
// written by kino, but one with absurd costs must not take the server
// down when verified.
const (
	maxArgonMemory  = 1 << 20 // 1 GiB
	maxArgonTime    = 16
	argonSaltLen    = 16
	argonKeyLen     = 32
	maxArgonKeyLen  = 64
	maxArgonSaltLen = 64
)

// HashPassword returns the argon2id PHC string of pw:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash> (unpadded
// standard base64), with a random salt from r.
func HashPassword(pw string, p Argon2Params, r io.Reader) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := io.ReadFull(r, salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	sum := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(sum)), nil
}

// parsePHC reads an argon2id PHC string written by HashPassword.
func parsePHC(phc string) (p Argon2Params, salt, sum []byte, err error) {
	parts := strings.Split(phc, "$")
	bad := errors.New("not an argon2id hash")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, bad
	}
	var m, t, threads uint64
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, perr := strconv.ParseUint(v, 10, 32)
		if perr != nil {
			return p, nil, nil, bad
		}
		switch k {
		case "m":
			m = n
		case "t":
			t = n
		case "p":
			threads = n
		default:
			return p, nil, nil, bad
		}
	}
	if m < 8 || m > maxArgonMemory || t < 1 || t > maxArgonTime || threads < 1 || threads > 255 || m < 8*threads {
		return p, nil, nil, bad
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil || len(salt) < 8 || len(salt) > maxArgonSaltLen {
		return p, nil, nil, bad
	}
	if sum, err = b64.DecodeString(parts[5]); err != nil || len(sum) < 16 || len(sum) > maxArgonKeyLen {
		return p, nil, nil, bad
	}
	return Argon2Params{Memory: uint32(m), Time: uint32(t), Threads: uint8(threads)}, salt, sum, nil
}

// VerifyPassword reports whether pw matches the PHC string, comparing in
// constant time.
func VerifyPassword(phc, pw string) (bool, error) {
	p, salt, sum, err := parsePHC(phc)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, uint32(len(sum)))
	return subtle.ConstantTimeCompare(got, sum) == 1, nil
}
