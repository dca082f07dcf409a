package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/wire"
)

// slugVar is the {slug} path variable, checked before it becomes part of a
// subject. A malformed slug cannot name a collection: 404.
func slugVar(r *http.Request) (string, error) {
	slug := mux.Vars(r)["slug"]
	if !domain.ValidSlug(slug) {
		return "", errNotFound("collection")
	}
	return slug, nil
}

func (s *Server) createCollection(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Slug           *string `json:"slug"`
		Name           *string `json:"name"`
		PlaybackPolicy *string `json:"playbackPolicy"`
		Downloads      *bool   `json:"downloads"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.Slug == nil {
		return errBadRequest("slug is required")
	}
	if body.Name == nil {
		return errBadRequest("name is required")
	}
	if !domain.ValidSlug(*body.Slug) {
		return errBadRequest("slug must match ^[a-z0-9][a-z0-9-]{0,62}$ (got %q)", *body.Slug)
	}
	policy, err := optionalPolicy(body.PlaybackPolicy)
	if err != nil {
		return err
	}
	acct := callerOf(r).Account
	res, err := execute[domain.Collection](r, s.cfg.Store, domain.CollectionStream(acct, *body.Slug),
		domain.CreateCollection{Account: acct, Slug: *body.Slug, Name: *body.Name, PlaybackPolicy: policy, Downloads: body.Downloads})
	if err != nil {
		return err
	}
	s.wrote(r, res.LastSeq())
	e := res.Events[0]
	respond.JSON(w, http.StatusCreated, wire.Collection{Slug: res.State.Slug, Name: res.State.Name,
		CreatedAt: domain.FormatTime(e.OccurredAt), UpdatedAt: domain.FormatTime(e.OccurredAt),
		PlaybackPolicy: res.State.Policy.OrPublic(), Downloads: res.State.Downloads, EmbedOrigins: []string{}})
	return nil
}

func (s *Server) writeCollection(w http.ResponseWriter, acct, slug string, status int) error {
	c, ok, err := s.cfg.DB.Collection(acct, slug)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound("collection")
	}
	respond.JSON(w, status, renderCollection(c))
	return nil
}

func (s *Server) listCollections(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.cfg.DB.Collections(callerOf(r).Account)
	if err != nil {
		return err
	}
	out := make([]wire.Collection, len(cs))
	for i, c := range cs {
		out[i] = renderCollection(c)
	}
	respond.JSON(w, http.StatusOK, wire.Collections{Collections: out})
	return nil
}

func (s *Server) getCollection(w http.ResponseWriter, r *http.Request) error {
	slug, err := slugVar(r)
	if err != nil {
		return err
	}
	return s.writeCollection(w, callerOf(r).Account, slug, http.StatusOK)
}

func (s *Server) renameCollection(w http.ResponseWriter, r *http.Request) error {
	slug, err := slugVar(r)
	if err != nil {
		return err
	}
	var body struct {
		Name           *string   `json:"name"`
		PlaybackPolicy *string   `json:"playbackPolicy"`
		Downloads      *bool     `json:"downloads"`
		EmbedOrigins   *[]string `json:"embedOrigins"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.Name == nil && body.PlaybackPolicy == nil && body.Downloads == nil && body.EmbedOrigins == nil {
		return errBadRequest("send at least one of name, playbackPolicy, downloads, embedOrigins")
	}
	policy, err := optionalPolicy(body.PlaybackPolicy) // checked before anything is written
	if err != nil {
		return err
	}
	if body.EmbedOrigins != nil {
		if _, err := domain.NormalizeOrigins("change collection settings", *body.EmbedOrigins); err != nil {
			return err
		}
	}
	acct := callerOf(r).Account
	if body.Name != nil {
		res, err := execute[domain.Collection](r, s.cfg.Store, domain.CollectionStream(acct, slug),
			domain.RenameCollection{Account: acct, Name: *body.Name})
		if err != nil {
			return err
		}
		s.settle(r, res.LastSeq())
	}
	if body.PlaybackPolicy != nil || body.Downloads != nil || body.EmbedOrigins != nil {
		cmd := domain.ChangeCollectionSettings{Account: acct, Downloads: body.Downloads, EmbedOrigins: body.EmbedOrigins}
		if body.PlaybackPolicy != nil {
			cmd.PlaybackPolicy = &policy
		}
		res, err := execute[domain.Collection](r, s.cfg.Store, domain.CollectionStream(acct, slug), cmd)
		if err != nil {
			return err
		}
		s.settle(r, res.LastSeq())
	}
	return s.writeCollection(w, acct, slug, http.StatusOK)
}

// deleteCollection refuses while the collection holds videos (409), as the
// read models count them.
func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request) error {
	slug, err := slugVar(r)
	if err != nil {
		return err
	}
	acct := callerOf(r).Account
	c, ok, err := s.cfg.DB.Collection(acct, slug)
	if err != nil {
		return err
	}
	if !ok {
		return errNotFound("collection")
	}
	res, err := execute[domain.Collection](r, s.cfg.Store, domain.CollectionStream(acct, slug),
		domain.DeleteCollection{Account: acct, VideoCount: c.VideoCount})
	if err != nil {
		return err
	}
	s.wrote(r, res.LastSeq())
	respond.JSON(w, http.StatusOK, wire.Message{Message: "Collection deleted"})
	return nil
}

// optionalPolicy checks a playbackPolicy given in a body ("": not given).
func optionalPolicy(p *string) (domain.PlaybackPolicy, error) {
	if p == nil {
		return "", nil
	}
	return domain.ParsePlaybackPolicy(*p)
}
