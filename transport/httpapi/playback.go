package httpapi

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/hls"
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
	// maxTokenLen bounds a token before anything parses it. Every URI of a
	// signed video's playlists carries the token, so its length multiplies
	// the bytes of each playlist served: 1 KiB is twice the longest token
	// the claims kino reads make (kid, sub, exp, nbf, iat, a 255-byte
	// origin), with room for a few claims of the customer's own.
	maxTokenLen = 1024
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
	claims, err := s.verifyToken(v, token)
	if err != nil {
		return err
	}
	if claims.Origin != "" && !strings.EqualFold(requestOrigin(r), claims.Origin) {
		return errPlayback("the token is for pages of another origin")
	}
	return nil
}

// verifyToken checks token's signature and claims for video v, all but
// the origin it may be bound to (which only a media request can show).
func (s *Server) verifyToken(v projections.Video, token string) (playbackClaims, error) {
	var claims playbackClaims
	switch {
	case token == "":
		return claims, errPlayback("no token")
	case len(token) > maxTokenLen:
		return claims, errPlayback("the token is too long")
	case !tokenChars(token):
		return claims, errPlayback("the token is malformed")
	}
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
		return claims, errPlayback("the token expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return claims, errPlayback("the token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidSubject):
		return claims, errPlayback("the token is for another video")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return claims, errPlayback("the token must carry sub and exp")
	case err != nil:
		return claims, errPlayback("the token is invalid")
	}
	return claims, nil
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

// parseOrigin checks an origin claim asked for and writes it as browsers
// send it: "https://host[:port]" (or http), lower-case, without the
// scheme's default port. A host a browser never sends (wildcards, a
// trailing dot, Unicode rather than its punycode, a port out of range)
// is refused: a token bound to it could never play.
func parseOrigin(o string) (string, error) {
	bad := errBadRequest(`origin must be an origin like "https://example.com" or "https://example.com:8443", with an internationalised name in punycode (got %q)`, truncateString(o, 80))
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
	// A PATCH names what it changes: a field this route cannot change
	// (a filename, a collection) is refused, not silently ignored.
	var body map[string]json.RawMessage
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	for name := range body {
		if name != "playbackPolicy" {
			return errBadRequest("only playbackPolicy can be changed on a video (got %q)", truncateString(name, 40))
		}
	}
	var policy string
	if raw, ok := body["playbackPolicy"]; !ok {
		return errBadRequest("playbackPolicy is required")
	} else if err := json.Unmarshal(raw, &policy); err != nil {
		return errBadRequest(`playbackPolicy must be "public" or "signed"`)
	}
	p, err := domain.ParsePlaybackPolicy(policy)
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

// maxPlaylist bounds a playlist (or storyboard) rewritten for a token (a
// ten-hour video's media playlist is well under 2 MiB), and maxLine one of
// its lines. The rewrite streams: a request costs one line of memory,
// whatever the file and the token.
const (
	maxPlaylist = 8 << 20
	maxLine     = 64 << 10
)

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
// lines, and URI="..." attributes of tags (hls.RewriteURIs).
func rewritePlaylist(pl []byte, token string) []byte {
	var out bytes.Buffer
	_ = rewriteLines(&out, bytes.NewReader(pl), token, playlistLine)
	return out.Bytes()
}

// playlistLine rewrites one line of a playlist (n is its index).
func playlistLine(_ int, s, token string) string {
	return hls.RewriteURIs(s, func(uri string) string { return withToken(uri, token) })
}

// rewriteLines copies r to w line by line, each through rewrite, keeping
// each line's ending (\n or \r\n; the last line's, or none). It reads at
// most maxPlaylist bytes and lines of at most maxLine.
func rewriteLines(w io.Writer, r io.Reader, token string, rewrite func(n int, line, token string) string) error {
	br := bufio.NewReaderSize(io.LimitReader(r, maxPlaylist+1), 32<<10)
	bw := bufio.NewWriterSize(w, 32<<10)
	read := 0
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return errors.New("a line is too long to rewrite")
		}
		if read += len(line); read > maxPlaylist {
			return errors.New("the file is too large to rewrite")
		}
		if len(line) > 0 {
			body, eol := line, []byte(nil)
			if bytes.HasSuffix(body, []byte("\n")) {
				body, eol = body[:len(body)-1], []byte("\n")
				if bytes.HasSuffix(body, []byte("\r")) {
					body, eol = body[:len(body)-1], []byte("\r\n")
				}
			}
			if _, werr := bw.WriteString(rewrite(n, string(body), token)); werr != nil {
				return werr
			}
			if _, werr := bw.Write(eol); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return bw.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// rewriteVTT gives the image references of a storyboard's WebVTT cues the
// token: every cue payload line that is a relative URI
// ("storyboard.jpg#xywh=0,0,160,90").
func rewriteVTT(vtt []byte, token string) []byte {
	var out bytes.Buffer
	_ = rewriteLines(&out, bytes.NewReader(vtt), token, vttLine)
	return out.Bytes()
}

// vttLine rewrites one line of a storyboard track (n is its index; the
// first is the WEBVTT header).
func vttLine(n int, l, token string) string {
	if n == 0 || l == "" || strings.Contains(l, "-->") || strings.HasPrefix(l, "NOTE") ||
		strings.ContainsAny(l, " \t") || !(strings.Contains(l, ".jpg") || strings.Contains(l, ".png") || strings.Contains(l, ".webp")) {
		return l
	}
	return withToken(l, token)
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
// token added to every URI it lists. The bytes depend on the token, so
// there is no ETag and no Range (a 200 with the whole file: RFC 9110
// lets a server ignore Range); the rewrite streams line by line, so a long
// playlist asked for by many clients at once with a long token costs a
// line of memory each, not the rewritten file.
func (s *Server) serveRewritten(w http.ResponseWriter, r *http.Request, f *media.File, rel, token string) error {
	if f.Size > maxPlaylist {
		return domain.E("serve media", domain.Internal, "%s of %d bytes is too large to rewrite", rel, f.Size)
	}
	h := w.Header()
	h.Del("Accept-Ranges")
	h.Del("ETag")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	rewrite := playlistLine
	if rel == wire.StoryboardPath {
		rewrite = vttLine
	}
	if err := rewriteLines(w, f, token, rewrite); err != nil {
		// The status is out: the client sees a short body. Logged, not
		// answered.
		logger(r, s.cfg.Log).Warn("rewrite media for a token", "file", rel, "err", err)
	}
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
