package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/kino-video/kino/transport/wire"
)

// CreateCollection creates a collection: slug matches
// ^[a-z0-9][a-z0-9-]{0,62}$, name is 1 to 255 characters. A slug in use
// is ErrConflict. Its videos are public and downloadable by default;
// CreateCollectionWith chooses otherwise.
func (c *Client) CreateCollection(ctx context.Context, slug, name string) (Collection, error) {
	return c.CreateCollectionWith(ctx, slug, name, CollectionSettings{})
}

// CollectionSettings are a collection's defaults for the videos uploaded
// into it (an upload may override them: WithPlaybackPolicy, WithDownload).
// Zero values are left out: the server's defaults on create (public,
// downloads on), unchanged on update.
type CollectionSettings struct {
	PlaybackPolicy PlaybackPolicy // PlaybackPublic or PlaybackSigned
	Downloads      *bool          // whether its videos get an MP4 download (Bool helps)
}

// Bool is a pointer to b, for CollectionSettings.Downloads.
func Bool(b bool) *bool { return &b }

// collectionBody is the JSON of a create or an update.
type collectionBody struct {
	Slug           string         `json:"slug,omitempty"`
	Name           string         `json:"name,omitempty"`
	PlaybackPolicy PlaybackPolicy `json:"playbackPolicy,omitempty"`
	Downloads      *bool          `json:"downloads,omitempty"`
	EmbedOrigins   *[]string      `json:"embedOrigins,omitempty"`
}

// CreateCollectionWith creates a collection with settings s.
func (c *Client) CreateCollectionWith(ctx context.Context, slug, name string, s CollectionSettings) (Collection, error) {
	cl := c.api(http.MethodPost, "/collections", nil)
	cl.body, cl.contentType = jsonBody(collectionBody{Slug: slug, Name: name, PlaybackPolicy: s.PlaybackPolicy,
		Downloads: s.Downloads}), "application/json"
	var out wire.Collection
	err := c.do(ctx, cl, &out)
	return collectionFrom(out), err
}

// CollectionUpdate changes a collection: the fields set (at least one).
type CollectionUpdate struct {
	Name string // "" keeps the name
	CollectionSettings
	// EmbedOrigins, when not nil, are the sites whose pages may frame
	// the collection's videos (an empty list: the server's default).
	EmbedOrigins *[]string
}

// UpdateCollection renames a collection and/or changes its settings
// (PATCH /v1/collections/{slug}). New settings apply to videos uploaded
// from now on; SetPlaybackPolicy changes a video's. An update without
// any field is ErrBadRequest.
func (c *Client) UpdateCollection(ctx context.Context, slug string, u CollectionUpdate) (Collection, error) {
	cl := c.api(http.MethodPatch, "/collections/"+url.PathEscape(slug), nil)
	cl.body, cl.contentType = jsonBody(collectionBody{Name: u.Name, PlaybackPolicy: u.PlaybackPolicy,
		Downloads: u.Downloads, EmbedOrigins: u.EmbedOrigins}), "application/json"
	var out wire.Collection
	err := c.do(ctx, cl, &out)
	return collectionFrom(out), err
}

// Collections lists the account's collections, by slug.
func (c *Client) Collections(ctx context.Context) ([]Collection, error) {
	var out wire.Collections
	if err := c.get(ctx, "/collections", nil, &out); err != nil {
		return nil, err
	}
	cs := make([]Collection, len(out.Collections))
	for i, w := range out.Collections {
		cs[i] = collectionFrom(w)
	}
	return cs, nil
}

// Collection reads one collection.
func (c *Client) Collection(ctx context.Context, slug string) (Collection, error) {
	var out wire.Collection
	err := c.get(ctx, "/collections/"+url.PathEscape(slug), nil, &out)
	return collectionFrom(out), err
}

// RenameCollection changes a collection's name (its videos show the new
// one); the slug stays.
func (c *Client) RenameCollection(ctx context.Context, slug, name string) (Collection, error) {
	cl := c.api(http.MethodPatch, "/collections/"+url.PathEscape(slug), nil)
	cl.body, cl.contentType = jsonBody(map[string]string{"name": name}), "application/json"
	var out wire.Collection
	err := c.do(ctx, cl, &out)
	return collectionFrom(out), err
}

// DeleteCollection deletes an empty collection; one that still holds
// videos is ErrConflict (the message says how many).
func (c *Client) DeleteCollection(ctx context.Context, slug string) error {
	return c.do(ctx, c.api(http.MethodDelete, "/collections/"+url.PathEscape(slug), nil), nil)
}
