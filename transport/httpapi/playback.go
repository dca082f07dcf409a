package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/player"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/tus"
	"github.com/kino-video/kino/transport/wire"
)

// Signed playback (docs/security.md, "Playback tokens"). A video whose
// policy is "signed" serves its media under /cdn only to a request with a
// valid ?token=: a JWT bound to the video (sub), expiring (exp), and
// optionally to the origin of the page that plays it. Two kinds are
// accepted, each with one algorithm, chosen by the header's kid alone:
//   - kid "kino-<key id>": issued by POST /v1/videos/{id}/playback-tokens,
//     HS256 with that key of kino's key ring (the same on every node);
//   - kid <signing key id>: signed by the account's own backend with the
//     private half of one of its signing keys, EdDSA (Ed25519); kino holds
//     the public half only.

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
	ttl := int64(playback.DefaultTTL)
	if body.TTL != nil {
		if *body.TTL < playback.MinTTL || *body.TTL > playback.MaxTTL {
			return errBadRequest("ttl must be from %d to %d seconds (got %d)", playback.MinTTL, playback.MaxTTL, *body.TTL)
		}
		ttl = *body.TTL
	}
	var origin string
	if body.Origin != nil {
		if origin, err = playback.ParseOrigin(*body.Origin); err != nil {
			return err
		}
	}
	signed, exp, err := s.tokens.Mint(r.Context(), v.ID, origin, time.Duration(ttl)*time.Second)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusCreated, wire.PlaybackToken{Token: signed, ExpiresAt: domain.FormatTime(exp)})
	return nil
}

// updateVideo is PATCH /v1/videos/{id}: playbackPolicy, title,
// description, tags (the whole set) and metadata (merged key by key: a
// key set to null or "" is removed; "metadata": null removes every key).
// One step: every change or none.
func (s *Server) updateVideo(w http.ResponseWriter, r *http.Request) error {
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
	cmd := domain.UpdateVideo{Account: callerOf(r).Account}
	for name, raw := range body {
		var err error
		switch name {
		case "playbackPolicy":
			var policy string
			if json.Unmarshal(raw, &policy) != nil {
				return errBadRequest(`playbackPolicy must be "public" or "signed"`)
			}
			p, err := domain.ParsePlaybackPolicy(policy)
			if err != nil {
				return err
			}
			cmd.Policy = &p
		case "title":
			cmd.Details.Title, err = patchString(name, raw)
		case "description":
			cmd.Details.Description, err = patchString(name, raw)
		case "tags":
			var tags []string
			if json.Unmarshal(raw, &tags) != nil {
				return errBadRequest("tags must be an array of strings")
			}
			if tags == nil {
				tags = []string{}
			}
			cmd.Details.Tags = &tags
		case "metadata":
			if string(raw) == "null" {
				cmd.Details.ClearMetadata = true
				continue
			}
			var m map[string]*string
			if json.Unmarshal(raw, &m) != nil {
				return errBadRequest("metadata must be an object of strings (a value of null or \"\" removes its key)")
			}
			if len(m) > domain.MaxMetadataKeys {
				return errBadRequest("at most %d metadata keys are allowed (got %d)", domain.MaxMetadataKeys, len(m))
			}
			cmd.Details.Metadata = make(map[string]string, len(m))
			for k, v := range m {
				cmd.Details.Metadata[k] = ""
				if v != nil {
					cmd.Details.Metadata[k] = *v
				}
			}
		case "thumbnailTime":
			var at float64
			if json.Unmarshal(raw, &at) != nil {
				return errBadRequest("thumbnailTime must be a number of seconds")
			}
			cmd.ThumbnailTime = &at
		default:
			return errBadRequest("only playbackPolicy, title, description, tags, metadata and thumbnailTime can be changed on a video (got %q)", domain.Truncate(name, 40))
		}
		if err != nil {
			return err
		}
	}
	if cmd.Policy == nil && cmd.Details.Empty() && cmd.ThumbnailTime == nil {
		return errBadRequest("name what to change: playbackPolicy, title, description, tags, metadata or thumbnailTime")
	}
	if cmd.ThumbnailTime != nil {
		// Within the video, once its length is known.
		if v, ok, err := s.cfg.DB.Video(id); err == nil && ok && v.Account == cmd.Account && v.Duration != nil && *cmd.ThumbnailTime >= *v.Duration {
			return errBadRequest("thumbnailTime must be before the end of the video (%.3f s)", *v.Duration)
		}
	}
	res, err := execute[domain.Video](r, s.cfg.Store, videoStream(id), cmd)
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	v, ok, err := s.cfg.DB.Video(id)
	if err != nil {
		return err
	}
	if !ok || v.Account != cmd.Account {
		return errNotFound("video")
	}
	respond.JSON(w, http.StatusOK, s.renderVideo(r, v))
	return nil
}

// patchString reads a PATCH's text field: a string, or null for "".
func patchString(name string, raw json.RawMessage) (*string, error) {
	var v *string
	if json.Unmarshal(raw, &v) != nil {
		return nil, errBadRequest("%s must be a string", name)
	}
	if v == nil {
		v = new(string)
	}
	return v, nil
}

// uploadSettings are an upload's optional playbackPolicy and download,
// overriding its collection's defaults (kept in the tus record too).
type uploadSettings = tus.Settings

// parseSettings reads the settings' text forms into u (multipart fields,
// tus metadata): a policy name, and "true" or "false"; absent ones are not
// set.
func parseSettings(u *uploadSettings, policy, download *string) error {
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
			return errBadRequest(`download must be "true" or "false" (got %q)`, domain.Truncate(*download, 40))
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// applySettings is what an upload into c gets: c's defaults, overridden
// by u.
func applySettings(u uploadSettings, c projections.Collection) (domain.PlaybackPolicy, bool) {
	policy, download := c.PlaybackPolicy.OrPublic(), c.Downloads
	if u.Policy != "" {
		policy = u.Policy
	}
	if u.Download != nil {
		download = *u.Download
	}
	return policy, download
}

// withToken passes a page's ?token= on to the media URLs its player
// loads, so a page or an embed of a signed video plays (/cdn checks the
// token; a malformed one is not passed on).
func withToken(v *wire.Video, token string) {
	if !playback.Plausible(token) {
		return
	}
	for _, u := range []**string{&v.PlaylistURL, &v.ThumbnailURL, &v.StoryboardURL} {
		if *u != nil {
			*u = ptr(**u + "?token=" + token)
		}
	}
}

// playHost gives package player the video a public page shows.
type playHost struct{ s *Server }

// PageVideo is live video id with its media URLs. A signed video's page
// shows nothing (not even its title) to a visitor without a valid token.
// An origin-bound token is checked for its origin by the media requests,
// not here: a page's own request names no origin. A page is not asked as
// the uploading account, so it does not wait for that account's writes:
// a miss waits once for the read models to catch up (catchUp), and a link
// shared the moment its upload was answered opens.
func (h playHost) PageVideo(r *http.Request, id, token string) (player.Video, error) {
	s := h.s
	if !domain.ValidID(id) {
		return player.Video{}, errNotFound("video")
	}
	v, ok, err := s.cfg.DB.Video(id)
	if err == nil && !ok && s.catchUp(r.Context()) {
		v, ok, err = s.cfg.DB.Video(id)
	}
	if err != nil {
		return player.Video{}, err
	}
	if !ok {
		return player.Video{}, errNotFound("video")
	}
	if v.PlaybackPolicy.OrPublic() == domain.PlaybackSigned {
		if _, err := s.tokens.Verify(r.Context(), v.ID, v.Account, token); err != nil {
			return player.Video{}, err
		}
	}
	res := s.renderVideo(r, v)
	if token != "" {
		withToken(&res, token)
	}
	pv := player.Video{Video: res, Width: v.Width, Height: v.Height}
	if c, ok, err := s.cfg.DB.Collection(v.Account, v.Collection); err == nil && ok {
		pv.FrameAncestors = c.EmbedOrigins
	}
	return pv, nil
}

func (h playHost) Origin(r *http.Request) string { return h.s.origin(r) }
