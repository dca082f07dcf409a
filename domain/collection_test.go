package domain_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kino-video/kino/domain"
)

var holiday = domain.CollectionCreated{Account: "acme", Slug: "holiday", Name: "Holiday"}

func TestCollectionDecide(t *testing.T) {
	create := func(slug string) domain.CreateCollection {
		return domain.CreateCollection{Account: "acme", Slug: slug, Name: "Holiday"}
	}
	created := func(slug string) []domain.Payload {
		return []domain.Payload{domain.CollectionCreated{Account: "acme", Slug: slug, Name: "Holiday"}}
	}
	deleted := domain.CollectionDeleted{Account: "acme", Slug: "holiday"}
	slug63 := "a" + strings.Repeat("-", 61) + "z"

	runDecide[domain.Collection](t, domain.CollectionStream("acme", "holiday").ID, []decideCase{
		{
			name: "create with the name trimmed",
			when: domain.CreateCollection{Account: "acme", Slug: "holiday", Name: "  Holiday \t"},
			then: []domain.Payload{holiday},
		},
		{name: "create with a one-character slug", when: create("a"), then: created("a")},
		{name: "create with a digit-first slug", when: create("2026-trip"), then: created("2026-trip")},
		{name: "create with a 63-character slug", when: create(slug63), then: created(slug63)},
		{name: "slug with upper case", when: create("Holiday"), err: domain.Invalid},
		{name: "slug with a leading dash", when: create("-holiday"), err: domain.Invalid},
		{name: "slug of 64 characters", when: create(slug63 + "a"), err: domain.Invalid},
		{name: "empty slug", when: create(""), err: domain.Invalid},
		{name: "slug with an underscore", when: create("hol_iday"), err: domain.Invalid},
		{name: "slug with a dot", when: create("hol.iday"), err: domain.Invalid},
		{name: "slug with a space", when: create("hol iday"), err: domain.Invalid},
		{name: "slug with a trailing newline", when: create("holiday\n"), err: domain.Invalid},
		{
			name: "blank name",
			when: domain.CreateCollection{Account: "acme", Slug: "holiday", Name: " \t "},
			err:  domain.Invalid,
		},
		{
			name: "name with a control character",
			when: domain.CreateCollection{Account: "acme", Slug: "holiday", Name: "Holi\x1bday"},
			err:  domain.Invalid,
		},
		{
			name: "name of 256 characters",
			when: domain.CreateCollection{Account: "acme", Slug: "holiday", Name: strings.Repeat("n", 256)},
			err:  domain.Invalid,
		},
		{
			name:  "create twice",
			given: []domain.Payload{holiday},
			when:  domain.CreateCollection{Account: "acme", Slug: "holiday", Name: "Again"},
			err:   domain.Conflict,
		},
		{
			name:  "create again after delete",
			given: []domain.Payload{holiday, deleted},
			when:  domain.CreateCollection{Account: "acme", Slug: "holiday", Name: "Holiday II"},
			then:  []domain.Payload{domain.CollectionCreated{Account: "acme", Slug: "holiday", Name: "Holiday II"}},
		},
		{
			name:  "rename with the name trimmed",
			given: []domain.Payload{holiday},
			when:  domain.RenameCollection{Account: "acme", Name: " Summer "},
			then:  []domain.Payload{domain.CollectionRenamed{Account: "acme", Slug: "holiday", Name: "Summer"}},
		},
		{
			name:  "rename to the same name is a no-op",
			given: []domain.Payload{holiday},
			when:  domain.RenameCollection{Account: "acme", Name: "Holiday"},
			then:  nil,
		},
		{
			name:  "rename to the same name padded is a no-op",
			given: []domain.Payload{holiday},
			when:  domain.RenameCollection{Account: "acme", Name: "  Holiday  "},
			then:  nil,
		},
		{
			name:  "rename back to the created name after a rename",
			given: []domain.Payload{holiday, domain.CollectionRenamed{Account: "acme", Slug: "holiday", Name: "Summer"}},
			when:  domain.RenameCollection{Account: "acme", Name: "Holiday"},
			then:  []domain.Payload{domain.CollectionRenamed{Account: "acme", Slug: "holiday", Name: "Holiday"}},
		},
		{
			name:  "rename by another account",
			given: []domain.Payload{holiday},
			when:  domain.RenameCollection{Account: "other", Name: "Summer"},
			err:   domain.NotFound,
		},
		{
			name: "rename a collection never created",
			when: domain.RenameCollection{Account: "acme", Name: "Summer"},
			err:  domain.NotFound,
		},
		{
			name:  "rename a deleted collection",
			given: []domain.Payload{holiday, deleted},
			when:  domain.RenameCollection{Account: "acme", Name: "Summer"},
			err:   domain.NotFound,
		},
		{
			name:  "rename to a blank name",
			given: []domain.Payload{holiday},
			when:  domain.RenameCollection{Account: "acme", Name: "   "},
			err:   domain.Invalid,
		},
		{
			name:  "delete while it holds videos",
			given: []domain.Payload{holiday},
			when:  domain.DeleteCollection{Account: "acme", VideoCount: 1},
			err:   domain.Conflict,
		},
		{
			name:  "delete an empty collection",
			given: []domain.Payload{holiday},
			when:  domain.DeleteCollection{Account: "acme"},
			then:  []domain.Payload{deleted},
		},
		{
			name:  "delete by another account",
			given: []domain.Payload{holiday},
			when:  domain.DeleteCollection{Account: "other"},
			err:   domain.NotFound,
		},
		{
			name:  "delete twice",
			given: []domain.Payload{holiday, deleted},
			when:  domain.DeleteCollection{Account: "acme"},
			err:   domain.NotFound,
		},
		{
			name: "delete a collection never created",
			when: domain.DeleteCollection{Account: "acme"},
			err:  domain.NotFound,
		},
		{
			name: "unknown command",
			when: domain.DeleteVideo{Account: "acme"},
			err:  domain.Internal,
		},
	})
}

func TestCollectionEvolve(t *testing.T) {
	id := domain.CollectionStream("acme", "holiday").ID
	tests := []struct {
		name  string
		given []domain.Payload
		want  domain.Collection
	}{
		{name: "nothing happened", want: domain.Collection{}},
		{
			name:  "created",
			given: []domain.Payload{holiday},
			want:  domain.Collection{Account: "acme", Slug: "holiday", Name: "Holiday", Live: true, Policy: domain.PlaybackPublic, Downloads: true},
		},
		{
			name:  "renamed",
			given: []domain.Payload{holiday, domain.CollectionRenamed{Account: "acme", Slug: "holiday", Name: "Summer"}},
			want:  domain.Collection{Account: "acme", Slug: "holiday", Name: "Summer", Live: true, Policy: domain.PlaybackPublic, Downloads: true},
		},
		{
			name:  "deleted",
			given: []domain.Payload{holiday, domain.CollectionDeleted{Account: "acme", Slug: "holiday"}},
			want:  domain.Collection{Account: "acme", Slug: "holiday", Name: "Holiday", Live: false, Policy: domain.PlaybackPublic, Downloads: true},
		},
		{
			name: "re-created after a rename and delete starts afresh",
			given: []domain.Payload{
				holiday,
				domain.CollectionRenamed{Account: "acme", Slug: "holiday", Name: "Summer"},
				domain.CollectionDeleted{Account: "acme", Slug: "holiday"},
				domain.CollectionCreated{Account: "acme", Slug: "holiday", Name: "Winter"},
			},
			want: domain.Collection{Account: "acme", Slug: "holiday", Name: "Winter", Live: true, Policy: domain.PlaybackPublic, Downloads: true},
		},
		{
			name:  "settings changed",
			given: []domain.Payload{holiday, domain.CollectionSettingsChanged{Account: "acme", Slug: "holiday", PlaybackPolicy: domain.PlaybackSigned}},
			want:  domain.Collection{Account: "acme", Slug: "holiday", Name: "Holiday", Live: true, Policy: domain.PlaybackSigned},
		},
		{
			name: "embed origins set",
			given: []domain.Payload{holiday, domain.CollectionSettingsChanged{Account: "acme", Slug: "holiday", PlaybackPolicy: domain.PlaybackPublic,
				Downloads: true, EmbedOrigins: []string{"https://blog.example.com"}}},
			want: domain.Collection{Account: "acme", Slug: "holiday", Name: "Holiday", Live: true, Policy: domain.PlaybackPublic, Downloads: true,
				EmbedOrigins: []string{"https://blog.example.com"}},
		},
		{
			name:  "created signed without downloads",
			given: []domain.Payload{domain.CollectionCreated{Account: "acme", Slug: "holiday", Name: "Holiday", PlaybackPolicy: domain.PlaybackSigned, NoDownloads: true}},
			want:  domain.Collection{Account: "acme", Slug: "holiday", Name: "Holiday", Live: true, Policy: domain.PlaybackSigned},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := given[domain.Collection](t, id, tc.given...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("state = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestCollectionStream(t *testing.T) {
	tests := []struct {
		name          string
		account, slug string
		id, filter    string
		subject       string
	}{
		{
			name: "short", account: "acme", slug: "a",
			id: "acme_a", filter: "collection.acme_a.*", subject: "collection.acme_a.CollectionCreated",
		},
		{
			// Dashes on both sides stay distinct: '_' is the only separator.
			name: "dashes", account: "a-b", slug: "c-d",
			id: "a-b_c-d", filter: "collection.a-b_c-d.*", subject: "collection.a-b_c-d.CollectionCreated",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := domain.CollectionStream(tc.account, tc.slug)
			if s.Aggregate != domain.AggCollection || s.ID != tc.id {
				t.Fatalf("CollectionStream(%q, %q) = %+v; want {%s %s}", tc.account, tc.slug, s, domain.AggCollection, tc.id)
			}
			if got := s.Filter(); got != tc.filter {
				t.Fatalf("Filter() = %q; want %q", got, tc.filter)
			}
			if got := s.Subject(domain.TypeCollectionCreated); got != tc.subject {
				t.Fatalf("Subject() = %q; want %q", got, tc.subject)
			}
		})
	}
	// Two different (account, slug) pairs must never share a stream.
	if domain.CollectionStream("a-b", "c") == domain.CollectionStream("a", "b-c") {
		t.Fatal(`CollectionStream("a-b", "c") == CollectionStream("a", "b-c")`)
	}
}

func TestSlugErrorMessageIsValidUTF8(t *testing.T) {
	// The message quotes the slug cut to 80 bytes; byte 80 of this slug is
	// inside an "é". Cutting there would leave half a character, which %q
	// would show as a \x escape.
	slug := "a" + strings.Repeat("é", 100)
	_, err := domain.Collection{}.Decide(domain.CreateCollection{Account: "acme", Slug: slug, Name: "x"}, now)
	checkErr(t, "create with a long non-ASCII slug", err, domain.Invalid)
	msg := domain.MessageOf(err)
	if !utf8.ValidString(msg) || strings.Contains(msg, `\x`) || !strings.Contains(msg, "aéé") || !strings.Contains(msg, "é…") {
		t.Fatalf("message %q: want the slug cut on a character boundary and marked with …", msg)
	}
}

func TestEmbedOriginsDecide(t *testing.T) {
	created := domain.CollectionCreated{Account: "acme", Slug: "holiday", Name: "Holiday"}
	origins := func(o ...string) *[]string { return &o }
	id := domain.CollectionStream("acme", "holiday").ID
	runDecide[domain.Collection](t, id, []decideCase{
		{name: "set, lower-cased, without repeats", given: []domain.Payload{created},
			when: domain.ChangeCollectionSettings{Account: "acme", EmbedOrigins: origins("https://Blog.example.com", "https://*.example.org:8443", "https://blog.example.com")},
			then: []domain.Payload{domain.CollectionSettingsChanged{Account: "acme", Slug: "holiday", PlaybackPolicy: domain.PlaybackPublic, Downloads: true,
				EmbedOrigins: []string{"https://blog.example.com", "https://*.example.org:8443"}}}},
		{name: "a path", given: []domain.Payload{created},
			when: domain.ChangeCollectionSettings{Account: "acme", EmbedOrigins: origins("https://example.com/page")}, err: domain.Invalid},
		{name: "a CSP break-out", given: []domain.Payload{created},
			when: domain.ChangeCollectionSettings{Account: "acme", EmbedOrigins: origins("https://a.com; script-src *")}, err: domain.Invalid},
		{name: "eleven", given: []domain.Payload{created},
			when: domain.ChangeCollectionSettings{Account: "acme", EmbedOrigins: origins("https://a1.com", "https://a2.com", "https://a3.com", "https://a4.com",
				"https://a5.com", "https://a6.com", "https://a7.com", "https://a8.com", "https://a9.com", "https://a10.com", "https://a11.com")}, err: domain.Invalid},
	})
}
