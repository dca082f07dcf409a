package apiclient

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kino-video/kino/transport/wire"
)

// PlaybackPolicy says who may fetch a video's media (kino's addition).
type PlaybackPolicy string

// The two playback policies.
const (
	// PlaybackPublic: anyone with the URL (the default).
	PlaybackPublic PlaybackPolicy = "public"
	// PlaybackSigned: the media answer 403 unless their URL carries
	// ?token=<playback token> (WithToken), from CreatePlaybackToken or
	// signed by your backend with a signing key (SignPlaybackToken).
	PlaybackSigned PlaybackPolicy = "signed"
)

// UploadOption overrides a collection's defaults for one upload (Upload,
// CreateResumable, UploadResumable, CreateDirectUpload).
type UploadOption func(*uploadSettings)

type uploadSettings struct {
	policy    PlaybackPolicy
	download  *bool
	details   Details
	thumbnail *float64
}

// Details are what an application says about a video: a title (by
// default the filename without its extension), a description, tags (at
// most 20 of up to 40 characters, no commas) and metadata of its own (at
// most 20 keys of A-Z a-z 0-9 _ . -, values up to 500 characters).
type Details struct {
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// WithDetails gives the uploaded video a title, description, tags and
// metadata.
func WithDetails(d Details) UploadOption {
	return func(s *uploadSettings) { s.details = d }
}

// WithPlaybackPolicy gives the uploaded video policy p instead of its
// collection's.
func WithPlaybackPolicy(p PlaybackPolicy) UploadOption {
	return func(s *uploadSettings) { s.policy = p }
}

// WithDownload makes the uploaded video get an MP4 download (on) or not,
// whatever its collection's setting.
func WithDownload(on bool) UploadOption {
	return func(s *uploadSettings) { s.download = &on }
}

// WithThumbnailTime makes the uploaded video's thumbnail the frame at
// seconds (kino's choice without it: a tenth of the way in).
func WithThumbnailTime(seconds float64) UploadOption {
	return func(s *uploadSettings) { s.thumbnail = &seconds }
}

func uploadSettingsOf(opts []UploadOption) uploadSettings {
	var s uploadSettings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return s
}

// fields are the settings as form fields / tus metadata, in a fixed order.
func (s uploadSettings) fields() [][2]string {
	var out [][2]string
	if s.policy != "" {
		out = append(out, [2]string{"playbackPolicy", string(s.policy)})
	}
	if s.download != nil {
		out = append(out, [2]string{"download", strconv.FormatBool(*s.download)})
	}
	if s.thumbnail != nil {
		out = append(out, [2]string{"thumbnailTime", strconv.FormatFloat(*s.thumbnail, 'f', -1, 64)})
	}
	d := s.details
	if d.Title != "" {
		out = append(out, [2]string{"title", d.Title})
	}
	if d.Description != "" {
		out = append(out, [2]string{"description", d.Description})
	}
	if len(d.Tags) > 0 {
		out = append(out, [2]string{"tags", strings.Join(d.Tags, ",")})
	}
	for _, k := range slices.Sorted(maps.Keys(d.Metadata)) {
		out = append(out, [2]string{"metadata[" + k + "]", d.Metadata[k]})
	}
	return out
}

// VideoUpdate changes a video (UpdateVideo): a nil field is left as it
// is. Title "" goes back to the default title; Tags replaces the tags;
// Metadata merges key by key, a key set to "" is removed, and
// ClearMetadata removes every key first.
type VideoUpdate struct {
	PlaybackPolicy *PlaybackPolicy
	Title          *string
	Description    *string
	Tags           *[]string
	Metadata       map[string]string
	ClearMetadata  bool
	// ThumbnailTime remakes the thumbnail from that moment (seconds).
	ThumbnailTime *float64
}

// UpdateVideo changes a video's playback policy and details (PATCH
// /v1/videos/{id}) in one step, and returns the video.
func (c *Client) UpdateVideo(ctx context.Context, id string, u VideoUpdate) (Video, error) {
	body := map[string]any{}
	if u.PlaybackPolicy != nil {
		body["playbackPolicy"] = *u.PlaybackPolicy
	}
	if u.Title != nil {
		body["title"] = *u.Title
	}
	if u.Description != nil {
		body["description"] = *u.Description
	}
	if u.Tags != nil {
		body["tags"] = *u.Tags
	}
	if u.ThumbnailTime != nil {
		body["thumbnailTime"] = *u.ThumbnailTime
	}
	switch {
	case u.ClearMetadata && len(u.Metadata) == 0:
		body["metadata"] = nil
	case u.ClearMetadata:
		return Video{}, errors.New("kino: UpdateVideo: ClearMetadata with Metadata: clear first, then set")
	case u.Metadata != nil:
		body["metadata"] = u.Metadata
	}
	cl := c.api(http.MethodPatch, "/videos/"+url.PathEscape(id), nil)
	cl.body, cl.contentType = jsonBody(body), "application/json"
	var v Video
	return v, c.do(ctx, cl, &v)
}

// SetPlaybackPolicy changes a video's playback policy (PATCH
// /v1/videos/{id}), in any status, and returns the video.
func (c *Client) SetPlaybackPolicy(ctx context.Context, id string, p PlaybackPolicy) (Video, error) {
	cl := c.api(http.MethodPatch, "/videos/"+url.PathEscape(id), nil)
	cl.body, cl.contentType = jsonBody(map[string]PlaybackPolicy{"playbackPolicy": p}), "application/json"
	var v Video
	return v, c.do(ctx, cl, &v)
}

// PlaybackToken is a token for one video's media: add it to their URLs
// with WithToken.
type PlaybackToken struct {
	Token     string
	ExpiresAt time.Time
}

// CreatePlaybackToken asks kino for a token for video id's media, valid
// for ttl (whole seconds, 1 min to 7 days; 0: the server's default, 1 h).
// With origin ("https://www.example.com"), only pages of that origin may
// use it. Tokens cannot be revoked: keep ttl short. Your backend can also
// make tokens without calling kino: SignPlaybackToken.
func (c *Client) CreatePlaybackToken(ctx context.Context, id string, ttl time.Duration, origin string) (PlaybackToken, error) {
	body := struct {
		TTL    int64  `json:"ttl,omitempty"`
		Origin string `json:"origin,omitempty"`
	}{int64(ttl / time.Second), origin}
	cl := c.api(http.MethodPost, "/videos/"+url.PathEscape(id)+"/playback-tokens", nil)
	cl.body, cl.contentType = jsonBody(body), "application/json"
	var out wire.PlaybackToken
	if err := c.do(ctx, cl, &out); err != nil {
		return PlaybackToken{}, err
	}
	return PlaybackToken{Token: out.Token, ExpiresAt: parseTime(out.ExpiresAt)}, nil
}

// WithToken is mediaURL (a Video's PlaylistURL, ThumbnailURL, ...) with
// ?token=token, replacing a token it had. A player needs it on the master
// playlist only: the playlists kino serves with a token list every URI
// with it. A URL that does not parse is returned as it is.
func WithToken(mediaURL, token string) string {
	u, err := url.Parse(mediaURL)
	if err != nil {
		return mediaURL
	}
	q := u.Query()
	q.Set("token", token)
	u.RawQuery = q.Encode()
	return u.String()
}

// playbackClaims are the claims kino reads from a playback token.
type playbackClaims struct {
	jwt.RegisteredClaims
	Origin string `json:"origin,omitempty"`
}

// SignPlaybackToken makes a playback token in your own backend, without
// calling kino: a JWT signed (EdDSA) with the private key of one of the
// account's signing keys (CreateSigningKey: privateKeyPEM is its
// PrivateKey, keyID its ID), for video videoID, valid for ttl from now.
// With origin, only pages of that origin may use it. kino accepts it
// until it expires or the key is deleted.
func SignPlaybackToken(privateKeyPEM, keyID, videoID string, ttl time.Duration, origin string) (PlaybackToken, error) {
	if keyID == "" || videoID == "" {
		return PlaybackToken{}, errors.New("kino: a playback token needs the signing key's id and the video's id")
	}
	if ttl <= 0 {
		return PlaybackToken{}, errors.New("kino: a playback token needs a ttl above 0")
	}
	key, err := jwt.ParseEdPrivateKeyFromPEM([]byte(privateKeyPEM))
	if err != nil {
		// The error does not quote the key.
		return PlaybackToken{}, fmt.Errorf("kino: the signing key is not an Ed25519 private key in PKCS#8 PEM: %w", err)
	}
	if _, ok := key.(ed25519.PrivateKey); !ok {
		return PlaybackToken{}, errors.New("kino: the signing key is not an Ed25519 private key")
	}
	now := time.Now()
	exp := now.Add(ttl).Truncate(time.Second)
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, playbackClaims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: videoID, ExpiresAt: jwt.NewNumericDate(exp),
			IssuedAt: jwt.NewNumericDate(now)},
		Origin: origin,
	})
	t.Header["kid"] = keyID
	s, err := t.SignedString(key)
	if err != nil {
		return PlaybackToken{}, fmt.Errorf("kino: signing the playback token: %w", err)
	}
	return PlaybackToken{Token: s, ExpiresAt: exp.UTC()}, nil
}

// SigningKey is one of the account's keys for signing playback tokens,
// as listed: without its private key.
type SigningKey struct {
	ID        string // a token's header names it as its kid
	Algorithm string // "EdDSA"
	Label     string
	CreatedAt time.Time
}

// CreatedSigningKey is a new signing key with its private key, which kino
// shows only this once and does not keep: store it in your backend's
// secrets.
type CreatedSigningKey struct {
	SigningKey
	PrivateKey string // PKCS#8 PEM, Ed25519
}

func signingKeyFrom(w wire.SigningKey) SigningKey {
	return SigningKey{ID: w.ID, Algorithm: w.Algorithm, Label: w.Label, CreatedAt: parseTime(w.CreatedAt)}
}

// CreateSigningKey makes a signing key (an account holds at most 20:
// past that ErrConflict).
func (c *Client) CreateSigningKey(ctx context.Context, label string) (CreatedSigningKey, error) {
	cl := c.api(http.MethodPost, "/signing-keys", nil)
	cl.body, cl.contentType = jsonBody(map[string]string{"label": label}), "application/json"
	var out wire.CreatedSigningKey
	if err := c.do(ctx, cl, &out); err != nil {
		return CreatedSigningKey{}, err
	}
	return CreatedSigningKey{SigningKey: SigningKey{ID: out.ID, Algorithm: out.Algorithm, Label: out.Label,
		CreatedAt: parseTime(out.CreatedAt)}, PrivateKey: out.PrivateKey}, nil
}

// SigningKeys lists the account's signing keys.
func (c *Client) SigningKeys(ctx context.Context) ([]SigningKey, error) {
	var out wire.SigningKeys
	if err := c.get(ctx, "/signing-keys", nil, &out); err != nil {
		return nil, err
	}
	keys := make([]SigningKey, len(out.SigningKeys))
	for i, k := range out.SigningKeys {
		keys[i] = signingKeyFrom(k)
	}
	return keys, nil
}

// DeleteSigningKey deletes a signing key: the tokens it signed are
// refused from then on.
func (c *Client) DeleteSigningKey(ctx context.Context, id string) error {
	return c.do(ctx, c.api(http.MethodDelete, "/signing-keys/"+url.PathEscape(id), nil), nil)
}

// RetryVideo queues a FAILED video for another processing run from its
// original (POST /v1/videos/{id}/retry); it is PENDING again. A video in
// another status is ErrConflict. Wait follows it as after an upload.
func (c *Client) RetryVideo(ctx context.Context, id string) (Uploaded, error) {
	var out Uploaded
	return out, c.do(ctx, c.api(http.MethodPost, "/videos/"+url.PathEscape(id)+"/retry", nil), &out)
}
