package httpapi

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/wire"
)

// Signed playback (docs/security.md, "Playback tokens"). A video whose
// policy is "signed" serves its media under /cdn only to a request with a
// valid ?token=: a JWT bound to the video (sub), expiring (exp), and
// optionally to the origin of the page that plays it. Two kinds are
// accepted, each with one algorithm, chosen by the header's kid alone:
//   - kid "kino": issued by POST /v1/videos/{id}/playback-tokens, HS256
//     with a key derived from kino's secret key (the same on every node);
//   - kid <signing key id>: signed by the account's own backend with the
//     private half of one of its signing keys, EdDSA (Ed25519); kino holds
//     the public half only.

// PlaybackKeyPurpose names the key kino's own tokens are signed with
// among the keys derived from the secret key (seal.Key.Derive).
const PlaybackKeyPurpose = "playback-token"

const (
	kinoKID = "kino"
	// maxTokenLen bounds a token before anything parses it.
	maxTokenLen = 4096
	// tokenLeeway forgives clocks that disagree a little (exp, nbf).
	tokenLeeway = 10 * time.Second
	// Bounds of a kino token's life (POST .../playback-tokens "ttl").
	minTokenTTL     = 60
	maxTokenTTL     = 7 * 24 * 3600
	defaultTokenTTL = 3600
)

// playbackClaims are the claims kino reads: the registered ones, and the
// origin allowed to play.
type playbackClaims struct {
	jwt.RegisteredClaims
	Origin string `json:"origin,omitempty"`
}

// deriver is what Config.Secrets may also do: derive a key for a purpose.
type deriver interface{ Derive(purpose string) []byte }

// playbackKey is the HS256 key of kino's tokens (nil: none can be issued
// or accepted).
func (s *Server) playbackKey() []byte { return s.cfg.PlaybackKey }

// errPlayback is the 403 of media refused for want of a valid token.
func errPlayback(why string) error {
	return domain.E("serve media", domain.Denied, "this video is signed: its media need a valid playback token in ?token= (%s)", why)
}

// tokenChars are the characters of a compact JWT (base64url and dots).
func tokenChars(t string) bool {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// verifyPlayback checks token for video v, as requested by r: the one
// check of every signed media request.
func (s *Server) verifyPlayback(r *http.Request, v projections.Video, token string) error {
	switch {
	case token == "":
		return errPlayback("no token")
	case len(token) > maxTokenLen:
		return errPlayback("the token is too long")
	case !tokenChars(token):
		return errPlayback("the token is malformed")
	}
	var claims playbackClaims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg(), jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithLeeway(tokenLeeway), jwt.WithTimeFunc(s.cfg.Now),
		jwt.WithSubject(v.ID), jwt.WithStrictDecoding())
	_, err := parser.ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == kinoKID {
			// The algorithm is pinned by the kid: kino's tokens are
			// HS256, whatever else the header says.
			if t.Method != jwt.SigningMethodHS256 || s.playbackKey() == nil {
				return nil, errors.New("kino tokens are HS256")
			}
			return s.playbackKey(), nil
		}
		if t.Method != jwt.SigningMethodEdDSA || !domain.ValidID(kid) {
			return nil, errors.New("signing key tokens are EdDSA with the key's id as kid")
		}
		k, ok, err := s.cfg.DB.SigningKey(v.Account, kid)
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
	case errors.Is(err, jwt.ErrTokenExpired):
		return errPlayback("the token expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return errPlayback("the token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidSubject):
		return errPlayback("the token is for another video")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return errPlayback("the token must carry sub and exp")
	case err != nil:
		return errPlayback("the token is invalid")
	}
	if claims.Origin != "" && !strings.EqualFold(requestOrigin(r), claims.Origin) {
		return errPlayback("the token is for pages of another origin")
	}
	return nil
}

// requestOrigin is the Origin header of r, or else the origin of its
// Referer ("" when it has neither).
func requestOrigin(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		return o
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		if u, err := url.Parse(ref); err == nil && u.Scheme != "" && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return ""
}

// parseOrigin checks an origin claim asked for: "https://host[:port]"
// (or http), nothing more; it is kept lower-case.
func parseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "/") || len(o) > 255 {
		return "", errBadRequest(`origin must be an origin like "https://example.com" or "https://example.com:8443" (got %q)`, truncateString(o, 80))
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

func truncateString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// issuePlaybackToken is POST /v1/videos/{id}/playback-tokens.
func (s *Server) issuePlaybackToken(w http.ResponseWriter, r *http.Request) error {
	v, err := s.videoVar(r)
	if err != nil {
		return err
	}
	if v.Account != callerOf(r).Account {
		return errNotFound("video")
	}
	var body struct {
		TTL    *int64  `json:"ttl"`
		Origin *string `json:"origin"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
	}
	ttl := int64(defaultTokenTTL)
	if body.TTL != nil {
		if *body.TTL < minTokenTTL || *body.TTL > maxTokenTTL {
			return errBadRequest("ttl must be from %d to %d seconds (got %d)", minTokenTTL, maxTokenTTL, *body.TTL)
		}
		ttl = *body.TTL
	}
	var origin string
	if body.Origin != nil {
		if origin, err = parseOrigin(*body.Origin); err != nil {
			return err
		}
	}
	if s.playbackKey() == nil {
		return domain.E("issue playback token", domain.Unavailable, "playback tokens need kino's secret key, which this server was not given")
	}
	now := s.cfg.Now().UTC().Truncate(time.Second)
	exp := now.Add(time.Duration(ttl) * time.Second)
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, playbackClaims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: v.ID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp)},
		Origin:           origin,
	})
	t.Header["kid"] = kinoKID
	signed, err := t.SignedString(s.playbackKey())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, wire.PlaybackToken{Token: signed, ExpiresAt: domain.FormatTime(exp)})
	return nil
}

// setVideoPolicy is PATCH /v1/videos/{id} {"playbackPolicy"}.
func (s *Server) setVideoPolicy(w http.ResponseWriter, r *http.Request) error {
	id := mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("video")
	}
	var body struct {
		PlaybackPolicy *string `json:"playbackPolicy"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.PlaybackPolicy == nil {
		return errBadRequest("playbackPolicy is required")
	}
	p, err := domain.ParsePlaybackPolicy(*body.PlaybackPolicy)
	if err != nil {
		return err
	}
	acct := callerOf(r).Account
	res, err := execute[domain.Video](r, s.cfg.Store, videoStream(id), domain.SetPlaybackPolicy{Account: acct, Policy: p})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	v, ok, err := s.cfg.DB.Video(id)
	if err != nil {
		return err
	}
	if !ok || v.Account != acct {
		return errNotFound("video")
	}
	writeJSON(w, http.StatusOK, s.renderVideo(r, v))
	return nil
}

// Signing keys of the caller's account (API key or session).

func (s *Server) createSigningKey(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Label string `json:"label"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	acct := callerOf(r).Account
	id := s.cfg.Store.NewID()
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(acct),
		domain.CreateSigningKey{KeyID: id, PublicKey: base64.RawURLEncoding.EncodeToString(pub), Label: body.Label})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("signing key created", "signing_key_id", id, "account", acct)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, wire.CreatedSigningKey{ID: id, Algorithm: domain.SigningAlgorithm,
		Label: strings.TrimSpace(body.Label), CreatedAt: domain.FormatTime(res.Events[0].OccurredAt),
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))})
	return nil
}

func (s *Server) listSigningKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.cfg.DB.SigningKeys(callerOf(r).Account)
	if err != nil {
		return err
	}
	out := make([]wire.SigningKey, len(keys))
	for i, k := range keys {
		out[i] = wire.SigningKey{ID: k.ID, Algorithm: k.Algorithm, Label: k.Label, CreatedAt: domain.FormatTime(k.CreatedAt)}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, wire.SigningKeys{SigningKeys: out})
	return nil
}

func (s *Server) deleteSigningKey(w http.ResponseWriter, r *http.Request) error {
	acct, id := callerOf(r).Account, mux.Vars(r)["id"]
	if !domain.ValidID(id) {
		return errNotFound("signing key")
	}
	if _, ok, err := s.cfg.DB.SigningKey(acct, id); err != nil {
		return err
	} else if !ok {
		return errNotFound("signing key")
	}
	res, err := execute[domain.Account](r, s.cfg.Store, domain.AccountStream(acct), domain.DeleteSigningKey{KeyID: id})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("signing key deleted", "signing_key_id", id, "account", acct)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// maxPlaylist bounds a playlist rewritten in memory (a ten-hour video's
// media playlist is well under 2 MiB).
const maxPlaylist = 8 << 20

// withToken adds token to a relative URI's query (before any fragment).
// Absolute URIs (another host, or a scheme) are left alone: a token is
// never sent anywhere but back to this /cdn. kino's playlists list only
// relative URIs.
func withToken(uri, token string) string {
	if uri == "" || strings.HasPrefix(uri, "//") || strings.Contains(uri, ":") {
		return uri
	}
	frag := ""
	if i := strings.IndexByte(uri, '#'); i >= 0 {
		uri, frag = uri[:i], uri[i:]
	}
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + "token=" + url.QueryEscape(token) + frag
}

// rewritePlaylist gives every URI an HLS playlist lists the token: URI
// lines, and URI="..." attributes of tags (EXT-X-MEDIA, EXT-X-MAP,
// EXT-X-I-FRAME-STREAM-INF, ...). Attributes are read as the HLS grammar
// has them (quoted strings hold no quote), so a name or a quoted value
// that merely contains URI= is not taken for one.
func rewritePlaylist(pl []byte, token string) []byte {
	out := make([]byte, 0, len(pl)+len(pl)/8)
	for len(pl) > 0 {
		line := pl
		var eol []byte
		if i := bytes.IndexByte(pl, '\n'); i >= 0 {
			line, eol, pl = pl[:i], pl[i:i+1], pl[i+1:]
		} else {
			pl = nil
		}
		cr := bytes.HasSuffix(line, []byte("\r"))
		if cr {
			line = line[:len(line)-1]
		}
		s := string(line)
		switch t := strings.TrimSpace(s); {
		case t == "":
		case strings.HasPrefix(t, "#"):
			s = rewriteTagURIs(s, token)
		default:
			s = withToken(t, token)
		}
		out = append(out, s...)
		if cr {
			out = append(out, '\r')
		}
		out = append(out, eol...)
	}
	return out
}

// rewriteTagURIs rewrites the URI attribute of one tag line
// (#EXT-X-...:NAME=VALUE,NAME="quoted",...).
func rewriteTagURIs(line, token string) string {
	colon := strings.IndexByte(line, ':')
	if !strings.HasPrefix(line, "#EXT") || colon < 0 || !strings.Contains(line[colon:], `URI="`) {
		return line
	}
	var b strings.Builder
	b.WriteString(line[:colon+1])
	rest := line[colon+1:]
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq < 0 || strings.ContainsAny(rest[:eq], `",`) {
			b.WriteString(rest) // not an attribute list: leave what is left
			break
		}
		name := rest[:eq]
		b.WriteString(rest[:eq+1])
		rest = rest[eq+1:]
		var value string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				b.WriteString(rest)
				break
			}
			value, rest = rest[:end+2], rest[end+2:]
			if strings.TrimSpace(name) == "URI" {
				value = `"` + withToken(value[1:len(value)-1], token) + `"`
			}
		} else if comma := strings.IndexByte(rest, ','); comma >= 0 {
			value, rest = rest[:comma], rest[comma:]
		} else {
			value, rest = rest, ""
		}
		b.WriteString(value)
		if strings.HasPrefix(rest, ",") {
			b.WriteByte(',')
			rest = rest[1:]
		}
	}
	return b.String()
}

// rewriteVTT gives the image references of a storyboard's WebVTT cues the
// token: every cue payload line that is a relative URI
// ("storyboard.jpg#xywh=0,0,160,90").
func rewriteVTT(vtt []byte, token string) []byte {
	lines := strings.Split(string(vtt), "\n")
	for i, l := range lines {
		t := strings.TrimRight(l, "\r")
		if i == 0 || t == "" || strings.Contains(t, "-->") || strings.HasPrefix(t, "NOTE") ||
			strings.ContainsAny(t, " \t") || !(strings.Contains(t, ".jpg") || strings.Contains(t, ".png") || strings.Contains(t, ".webp")) {
			continue
		}
		lines[i] = withToken(t, token) + l[len(t):]
	}
	return []byte(strings.Join(lines, "\n"))
}

// access is what /cdn learned of a request for a video's file.
type access struct {
	signed    bool   // the video is signed, and token was found valid for it
	token     string // the request's valid token (signed only)
	completed bool   // the video is COMPLETED: its playlists no longer change
}

// mediaAccess decides whether r may fetch the files of video id: 404 when
// the read models know no such video (files outlive nothing: a deleted
// video's leftovers are not served), 403 when it is signed and r has no
// valid token.
func (s *Server) mediaAccess(r *http.Request, id string) (access, error) {
	v, ok, err := s.cfg.DB.Video(id)
	if err != nil {
		return access{}, err
	}
	if !ok {
		return access{}, errNotFound("file")
	}
	a := access{completed: v.Status == domain.StatusCompleted}
	if v.PlaybackPolicy.OrPublic() != domain.PlaybackSigned {
		return a, nil
	}
	token := r.URL.Query().Get("token")
	if err := s.verifyPlayback(r, v, token); err != nil {
		return access{}, err
	}
	a.signed, a.token = true, token
	return a, nil
}

// cacheControl sets the Cache-Control of file rel, and reports whether it
// is served rewritten (the playlists and storyboard of a signed video,
// which list URIs that need the token).
func (a access) cacheControl(h http.Header, rel string) (rewrite bool) {
	playlist := strings.HasSuffix(rel, ".m3u8")
	if playlist && !a.completed {
		h.Set("Cache-Control", "no-cache") // an EVENT playlist still growing
	}
	if !a.signed {
		return false
	}
	if playlist || rel == wire.StoryboardPath {
		h.Set("Cache-Control", "private, no-cache")
		return true
	}
	// Bytes that never change, for this browser only: a shared cache must
	// not hand them to requests without a token.
	h.Set("Cache-Control", "private, max-age=3600")
	return false
}

// serveRewritten serves a playlist or storyboard of a signed video with
// token added to every URI it lists. It has no ETag (the bytes depend on
// the token); Range still works on the rewritten bytes.
func (s *Server) serveRewritten(w http.ResponseWriter, r *http.Request, f *media.File, rel, token string) error {
	b, err := io.ReadAll(io.LimitReader(f, maxPlaylist+1))
	if err != nil {
		return err
	}
	if len(b) > maxPlaylist {
		return domain.E("serve media", domain.Internal, "%s of %d+ bytes is too large to rewrite", rel, len(b))
	}
	if rel == wire.StoryboardPath {
		b = rewriteVTT(b, token)
	} else {
		b = rewritePlaylist(b, token)
	}
	http.ServeContent(&rangeErrorWriter{ResponseWriter: w, r: r, log: s.cfg.Log, size: int64(len(b))}, r, "", time.Time{}, bytes.NewReader(b))
	return nil
}

// uploadSettings are an upload's optional playbackPolicy and download,
// overriding its collection's defaults.
type uploadSettings struct {
	Policy   domain.PlaybackPolicy `json:"playbackPolicy,omitempty"` // "": the collection's
	Download *bool                 `json:"download,omitempty"`       // nil: the collection's
}

// parse reads the settings' text forms (multipart fields, tus metadata):
// a policy name, and "true" or "false"; absent ones are not set.
func (u *uploadSettings) parse(policy, download *string) error {
	if policy != nil {
		p, err := domain.ParsePlaybackPolicy(strings.TrimSpace(*policy))
		if err != nil {
			return err
		}
		u.Policy = p
	}
	if download != nil {
		switch strings.TrimSpace(*download) {
		case "true":
			u.Download = ptr(true)
		case "false":
			u.Download = ptr(false)
		default:
			return errBadRequest(`download must be "true" or "false" (got %q)`, truncateString(*download, 40))
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// apply is what an upload into c gets: c's defaults, overridden by u.
func (u uploadSettings) apply(c projections.Collection) (domain.PlaybackPolicy, bool) {
	policy, download := c.PlaybackPolicy.OrPublic(), c.Downloads
	if u.Policy != "" {
		policy = u.Policy
	}
	if u.Download != nil {
		download = *u.Download
	}
	return policy, download
}

// metaSettings reads an upload's settings from tus Upload-Metadata.
func metaSettings(meta map[string]string) (uploadSettings, error) {
	var u uploadSettings
	var p, d *string
	if v, ok := meta["playbackPolicy"]; ok {
		p = &v
	}
	if v, ok := meta["download"]; ok {
		d = &v
	}
	return u, u.parse(p, d)
}

// playTokenURLs passes /play's ?token= on to the media URLs its player
// loads, so an embed of a signed video plays (/cdn checks the token; a
// malformed one is not passed on).
func playTokenURLs(r *http.Request, v *wire.Video) {
	token := r.URL.Query().Get("token")
	if token == "" || len(token) > maxTokenLen || !tokenChars(token) {
		return
	}
	for _, u := range []**string{&v.PlaylistURL, &v.ThumbnailURL} {
		if *u != nil {
			*u = ptr(**u + "?token=" + token)
		}
	}
}
