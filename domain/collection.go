package domain

import (
	"regexp"
	"slices"
	"strings"
	"time"
)

// Collection event types.
const (
	TypeCollectionCreated = "CollectionCreated"
	TypeCollectionRenamed = "CollectionRenamed"
	TypeCollectionDeleted = "CollectionDeleted"

	TypeCollectionSettingsChanged = "CollectionSettingsChanged"
)

type CollectionCreated struct {
	Account string `json:"account"`
	Slug    string `json:"slug"`
	Name    string `json:"name"`
	// PlaybackPolicy is the default of the collection's new videos; absent
	// in older events: public.
	PlaybackPolicy PlaybackPolicy `json:"playbackPolicy,omitempty"`
	// NoDownloads turns the MP4 download rendition off for the
	// collection's new videos (it is on by default; absent: on).
	NoDownloads bool `json:"noDownloads,omitempty"`
}

type CollectionRenamed struct {
	Account string `json:"account"`
	Slug    string `json:"slug"`
	Name    string `json:"name"`
}

type CollectionDeleted struct {
	Account string `json:"account"`
	Slug    string `json:"slug"`
}

// CollectionSettingsChanged: the collection's defaults for its new videos.
// It carries every setting as it is after the change.
type CollectionSettingsChanged struct {
	Account        string         `json:"account"`
	Slug           string         `json:"slug"`
	PlaybackPolicy PlaybackPolicy `json:"playbackPolicy"`
	Downloads      bool           `json:"downloads"`
	// EmbedOrigins are the sites (origins) whose pages may frame the
	// collection's videos (/embed, /play) instead of the server's default;
	// absent: the default.
	EmbedOrigins []string `json:"embedOrigins,omitempty"`
}

func (CollectionCreated) EventType() string { return TypeCollectionCreated }
func (CollectionCreated) Aggregate() string { return AggCollection }
func (CollectionRenamed) EventType() string { return TypeCollectionRenamed }
func (CollectionRenamed) Aggregate() string { return AggCollection }
func (CollectionDeleted) EventType() string { return TypeCollectionDeleted }
func (CollectionDeleted) Aggregate() string { return AggCollection }

func (CollectionSettingsChanged) EventType() string { return TypeCollectionSettingsChanged }
func (CollectionSettingsChanged) Aggregate() string { return AggCollection }

// CollectionStream names the aggregate of an account's collection. Slugs are
// unique per account, so the id is derived from both; '_' cannot occur in a
// slug, so the id is unambiguous and a valid subject token.
func CollectionStream(account, slug string) StreamID {
	return StreamID{Aggregate: AggCollection, ID: account + "_" + slug}
}

// Collection is the write-side state of one collection slug of one account.
type Collection struct {
	Account, Slug, Name string
	Live                bool // created and not deleted
	Policy              PlaybackPolicy
	Downloads           bool
	EmbedOrigins        []string
}

func (c Collection) Evolve(e Event) Collection {
	switch d := e.Data.(type) {
	case CollectionCreated:
		c = Collection{Account: d.Account, Slug: d.Slug, Name: d.Name, Live: true,
			Policy: d.PlaybackPolicy.OrPublic(), Downloads: !d.NoDownloads}
	case CollectionSettingsChanged:
		c.Policy, c.Downloads, c.EmbedOrigins = d.PlaybackPolicy.OrPublic(), d.Downloads, d.EmbedOrigins
	case CollectionRenamed:
		c.Name = d.Name
	case CollectionDeleted:
		c.Live = false
	}
	return c
}

// CreateCollection creates a collection; PlaybackPolicy "" is public,
// Downloads nil is on.
type CreateCollection struct {
	Account, Slug, Name string
	PlaybackPolicy      PlaybackPolicy
	Downloads           *bool
}
type RenameCollection struct{ Account, Name string }

// DeleteCollection carries the number of videos the collection holds, read
// by the caller from the projection.
type DeleteCollection struct {
	Account    string
	VideoCount int
}

// ChangeCollectionSettings changes what is given (nil: unchanged).
type ChangeCollectionSettings struct {
	Account        string
	PlaybackPolicy *PlaybackPolicy
	Downloads      *bool
	EmbedOrigins   *[]string // [] goes back to the server's default
}

func (c Collection) Decide(cmd any, _ time.Time) ([]Payload, error) {
	switch x := cmd.(type) {
	case CreateCollection:
		const op = "create collection"
		if err := checkSlug(op, "slug", x.Slug); err != nil {
			return nil, err
		}
		name := strings.TrimSpace(x.Name)
		if err := checkName(op, "name", name); err != nil {
			return nil, err
		}
		if c.Live {
			return nil, E(op, Conflict, "collection %q already exists", x.Slug)
		}
		if x.PlaybackPolicy != "" {
			if _, err := ParsePlaybackPolicy(string(x.PlaybackPolicy)); err != nil {
				return nil, err
			}
		}
		created := CollectionCreated{Account: x.Account, Slug: x.Slug, Name: name, NoDownloads: x.Downloads != nil && !*x.Downloads}
		if x.PlaybackPolicy != PlaybackPublic {
			created.PlaybackPolicy = x.PlaybackPolicy
		}
		return []Payload{created}, nil
	case ChangeCollectionSettings:
		const op = "change collection settings"
		if !c.Live || c.Account != x.Account {
			return nil, E(op, NotFound, "collection not found")
		}
		next := CollectionSettingsChanged{Account: x.Account, Slug: c.Slug, PlaybackPolicy: c.Policy, Downloads: c.Downloads, EmbedOrigins: c.EmbedOrigins}
		if x.PlaybackPolicy != nil {
			p, err := ParsePlaybackPolicy(string(*x.PlaybackPolicy))
			if err != nil {
				return nil, err
			}
			next.PlaybackPolicy = p
		}
		if x.Downloads != nil {
			next.Downloads = *x.Downloads
		}
		if x.EmbedOrigins != nil {
			origins, err := NormalizeOrigins(op, *x.EmbedOrigins)
			if err != nil {
				return nil, err
			}
			next.EmbedOrigins = origins
		}
		if next.PlaybackPolicy == c.Policy && next.Downloads == c.Downloads && slices.Equal(next.EmbedOrigins, c.EmbedOrigins) {
			return nil, nil
		}
		return []Payload{next}, nil
	case RenameCollection:
		const op = "rename collection"
		if !c.Live || c.Account != x.Account {
			return nil, E(op, NotFound, "collection not found")
		}
		name := strings.TrimSpace(x.Name)
		if err := checkName(op, "name", name); err != nil {
			return nil, err
		}
		if name == c.Name {
			return nil, nil
		}
		return []Payload{CollectionRenamed{Account: x.Account, Slug: c.Slug, Name: name}}, nil
	case DeleteCollection:
		const op = "delete collection"
		if !c.Live || c.Account != x.Account {
			return nil, E(op, NotFound, "collection not found")
		}
		if x.VideoCount > 0 {
			return nil, E(op, Conflict, "collection %q still holds %d video(s); delete them first", c.Slug, x.VideoCount)
		}
		return []Payload{CollectionDeleted{Account: x.Account, Slug: c.Slug}}, nil
	}
	return nil, E("decide collection", Internal, "unknown command %T", cmd)
}

// MaxEmbedOrigins bounds a collection's embedOrigins.
const MaxEmbedOrigins = 10

var originRE = regexp.MustCompile(`^https?://(\*\.)?[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)

// ValidOrigin reports whether o is an origin a page may be framed by
// ("https://example.com", "https://*.example.com:8443"), and nothing that
// could break out of a Content-Security-Policy (spaces, semicolons,
// quotes, paths).
func ValidOrigin(o string) bool { return len(o) <= 253 && originRE.MatchString(o) }

// NormalizeOrigins checks embedOrigins (lower-cased, without repeats, in the
// order given); none is nil.
func NormalizeOrigins(op string, origins []string) ([]string, error) {
	if len(origins) > MaxEmbedOrigins {
		return nil, E(op, Invalid, "at most %d embedOrigins are allowed (got %d)", MaxEmbedOrigins, len(origins))
	}
	var out []string
	for _, o := range origins {
		o = strings.ToLower(strings.TrimSpace(o))
		if !ValidOrigin(o) {
			return nil, E(op, Invalid, "embedOrigins: %q is not an origin like https://example.com", Truncate(o, 80))
		}
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out, nil
}
