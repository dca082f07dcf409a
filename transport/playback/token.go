package playback

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
)

// MaxTokenLen bounds a token before anything parses it. Every URI of a
// signed video's playlists carries the token, so its length multiplies
// the bytes of each playlist served: 1 KiB is twice the longest token the
// claims kino reads make (kid, sub, exp, nbf, iat, a 255-byte origin),
// with room for a few claims of the customer's own.
const MaxTokenLen = 1024

// Bounds of a kino token's life, in seconds (POST .../playback-tokens "ttl").
const (
	MinTTL     = 60
	MaxTTL     = 7 * 24 * 3600
	DefaultTTL = 3600
)

const (
	// kinoKID starts the kid of kino's own tokens: "kino-" and the id of
	// the ring's key that signed it.
	kinoKID = "kino-"
	// tokenLeeway forgives clocks that disagree a little (exp, nbf).
	tokenLeeway = 10 * time.Second
)

// Claims are the claims kino reads: the registered ones, and the origin
// allowed to play.
type Claims struct {
	jwt.RegisteredClaims
	Origin string `json:"origin,omitempty"`
}

// SigningKeys reads the public halves of accounts' signing keys
// (projections.DB).
type SigningKeys interface {
	SigningKey(account, id string) (projections.SigningKey, bool, error)
}

// Tokens mints and verifies playback tokens.
type Tokens struct {
	Ring KeyRing     // the HS256 keys of kino's tokens; nil: none is minted or accepted
	Keys SigningKeys // the accounts' signing keys
	Now  func() time.Time
}

// Denied is the refusal of media for want of a valid token (why says
// what is wrong with it).
func Denied(why string) error {
	return domain.E("serve media", domain.Denied, "this video is signed: its media need a valid playback token in ?token= (%s)", why)
}

// Plausible reports whether token could be a token at all: not too long,
// and only the characters of a compact JWT (base64url and dots).
func Plausible(token string) bool {
	if token == "" || len(token) > MaxTokenLen {
		return false
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// CanMint reports whether kino has keys to mint its own tokens with.
func (t Tokens) CanMint() bool { return t.Ring != nil }

// Mint signs a kino token for video with the ring's current key, living
// ttl from now (to the second), bound to origin unless it is "" (an
// origin ParseOrigin wrote).
func (t Tokens) Mint(ctx context.Context, video, origin string, ttl time.Duration) (token string, exp time.Time, err error) {
	if t.Ring == nil {
		return "", time.Time{}, domain.E("issue playback token", domain.Unavailable, "playback tokens need kino's key ring, which this server was not given")
	}
	kid, key, err := t.Ring.Current(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	now := t.Now().UTC().Truncate(time.Second)
	exp = now.Add(ttl)
	jt := jwt.NewWithClaims(jwt.SigningMethodHS256, Claims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: video, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp)},
		Origin:           origin,
	})
	jt.Header["kid"] = kinoKID + kid
	token, err = jt.SignedString(key)
	return token, exp, err
}

// Verify checks token's signature and claims for video (of account), all
// but the origin it may be bound to (which only a media request can
// show: the caller compares Claims.Origin).
func (t Tokens) Verify(ctx context.Context, video, account, token string) (Claims, error) {
	var claims Claims
	switch {
	case token == "":
		return claims, Denied("no token")
	case len(token) > MaxTokenLen:
		return claims, Denied("the token is too long")
	case !Plausible(token):
		return claims, Denied("the token is malformed")
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg(), jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithLeeway(tokenLeeway), jwt.WithTimeFunc(t.Now),
		jwt.WithSubject(video), jwt.WithStrictDecoding())
	var ringErr error // the ring could not be read: not the token's fault
	_, err := parser.ParseWithClaims(token, &claims, func(jt *jwt.Token) (any, error) {
		kid, _ := jt.Header["kid"].(string)
		if id, ok := strings.CutPrefix(kid, kinoKID); ok {
			// The algorithm is pinned by the kid: kino's tokens are
			// HS256, whatever else the header says.
			if jt.Method != jwt.SigningMethodHS256 || t.Ring == nil {
				return nil, errors.New("kino tokens are HS256")
			}
			key, ok, err := t.Ring.Lookup(ctx, id)
			if err != nil {
				ringErr = err
				return nil, err
			}
			if !ok {
				return nil, errors.New("the key that signed it was rotated out")
			}
			return key, nil
		}
		if jt.Method != jwt.SigningMethodEdDSA || !domain.ValidID(kid) {
			return nil, errors.New("signing key tokens are EdDSA with the key's id as kid")
		}
		k, ok, err := t.Keys.SigningKey(account, kid)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errors.New("no such signing key")
		}
		pub, err := base64.RawURLEncoding.DecodeString(k.PublicKey)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			return nil, errors.New("malformed public key")
		}
		return ed25519.PublicKey(pub), nil
	})
	switch {
	case ringErr != nil:
		return claims, ringErr
	case errors.Is(err, jwt.ErrTokenExpired):
		return claims, Denied("the token expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return claims, Denied("the token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidSubject):
		return claims, Denied("the token is for another video")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return claims, Denied("the token must carry sub and exp")
	case err != nil:
		return claims, Denied("the token is invalid")
	}
	return claims, nil
}

// ParseOrigin checks an origin claim asked for and writes it as browsers
// send it: "https://host[:port]" (or http), lower-case, without the
// scheme's default port. A host a browser never sends (wildcards, a
// trailing dot, Unicode rather than its punycode, a port out of range)
// is refused: a token bound to it could never play.
func ParseOrigin(o string) (string, error) {
	shown := o
	if len(shown) > 80 {
		shown = shown[:80] + "…"
	}
	bad := domain.E("", domain.Invalid, `origin must be an origin like "https://example.com" or "https://example.com:8443", with an internationalised name in punycode (got %q)`, shown)
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || strings.ContainsAny(o, "?#") || strings.HasSuffix(o, "/") || len(o) > 255 {
		return "", bad
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || strings.HasSuffix(host, ".") || strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return "", bad
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':' && strings.HasPrefix(u.Host, "[")) {
			return "", bad
		}
	}
	if strings.HasSuffix(u.Host, ":") {
		return "", bad
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", bad
		}
		if (u.Scheme == "https" && n == 443) || (u.Scheme == "http" && n == 80) {
			port = ""
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}
