package apiclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/kino-video/kino/transport/wire"
)

// CreateCollection creates a collection: slug matches
// ^[a-z0-9][a-z0-9-]{0,62}$, name is 1 to 255 characters. A slug in use
// is ErrConflict.
func (c *Client) CreateCollection(ctx context.Context, slug, name string) (Collection, error) {
	cl := c.api(http.MethodPost, "/collections", nil)
	cl.body, cl.contentType = jsonBody(map[string]string{"slug": slug, "name": name}), "application/json"
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
