package domain_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

const (
	webhookID = "01JHOOK000000000000000000A"
	sealed    = "sealed.v1.bm90IHJlYWxseSBzZWFsZWQsIGp1c3QgYSB0ZXN0" // the domain never opens it
)

var subscribed = domain.WebhookSubscribed{
	Account:      "acme",
	URL:          "https://example.com/hooks/kino",
	Events:       []string{domain.EventVideoCompleted, domain.EventVideoFailed},
	SealedSecret: sealed,
}

func TestWebhookDecide(t *testing.T) {
	subscribe := func(url string, events ...string) domain.SubscribeWebhook {
		return domain.SubscribeWebhook{Account: "acme", URL: url, SealedSecret: sealed, Events: events}
	}
	both := []string{domain.EventVideoCompleted, domain.EventVideoFailed}
	withURL := func(url string) []domain.Payload {
		return []domain.Payload{domain.WebhookSubscribed{Account: "acme", URL: url, Events: both, SealedSecret: sealed}}
	}

	runDecide[domain.Webhook](t, webhookID, []decideCase{
		{
			name: "subscribe with events deduplicated and sorted",
			when: subscribe("https://example.com/hooks/kino", domain.EventVideoFailed, domain.EventVideoCompleted, domain.EventVideoFailed),
			then: []domain.Payload{subscribed},
		},
		{
			name: "subscribe to one event",
			when: subscribe("http://example.com/h", domain.EventVideoFailed, domain.EventVideoFailed),
			then: []domain.Payload{domain.WebhookSubscribed{Account: "acme", URL: "http://example.com/h", Events: []string{domain.EventVideoFailed}, SealedSecret: sealed}},
		},
		{
			name: "subscribe with the url trimmed",
			when: subscribe("  https://example.com/h \n", both...),
			then: withURL("https://example.com/h"),
		},
		{
			name: "subscribe to a port and query",
			when: subscribe("https://example.com:8443/h?x=1", both...),
			then: withURL("https://example.com:8443/h?x=1"),
		},
		{name: "no events", when: subscribe("https://example.com/h"), err: domain.Invalid},
		{name: "empty event list", when: subscribe("https://example.com/h", []string{}...), err: domain.Invalid},
		{name: "unknown event", when: subscribe("https://example.com/h", domain.EventVideoCompleted, "video.uploaded"), err: domain.Invalid},
		{name: "event in upper case", when: subscribe("https://example.com/h", "VIDEO.COMPLETED"), err: domain.Invalid},
		{name: "relative url", when: subscribe("/hooks/kino", both...), err: domain.Invalid},
		{name: "host without scheme", when: subscribe("example.com/hooks", both...), err: domain.Invalid},
		{name: "ftp url", when: subscribe("ftp://example.com/hooks", both...), err: domain.Invalid},
		{name: "javascript url", when: subscribe("javascript:alert(1)", both...), err: domain.Invalid},
		{name: "url with user and password", when: subscribe("https://user:pass@example.com/h", both...), err: domain.Invalid},
		{name: "url with a user only", when: subscribe("https://user@example.com/h", both...), err: domain.Invalid},
		{name: "empty url", when: subscribe("", both...), err: domain.Invalid},
		{name: "blank url", when: subscribe("   ", both...), err: domain.Invalid},
		{name: "url without a host", when: subscribe("https:///h", both...), err: domain.Invalid},
		{name: "url with only a port", when: subscribe("https://:8080/h", both...), err: domain.Invalid},
		{name: "url with a space in the host", when: subscribe("https://exa mple.com/h", both...), err: domain.Invalid},
		{
			name: "url longer than the limit",
			when: subscribe("https://example.com/"+strings.Repeat("a", domain.MaxURLLen), both...),
			err:  domain.Invalid,
		},
		{
			name: "secret not sealed",
			when: domain.SubscribeWebhook{Account: "acme", URL: "https://example.com/h", Events: both},
			err:  domain.Internal,
		},
		{
			name:  "subscribe twice",
			given: []domain.Payload{subscribed},
			when:  subscribe("https://example.com/other", both...),
			err:   domain.Conflict,
		},
		{
			name:  "delete",
			given: []domain.Payload{subscribed},
			when:  domain.DeleteWebhook{Account: "acme"},
			then:  []domain.Payload{domain.WebhookDeleted{Account: "acme"}},
		},
		{
			name:  "delete by another account",
			given: []domain.Payload{subscribed},
			when:  domain.DeleteWebhook{Account: "other"},
			err:   domain.NotFound,
		},
		{
			name:  "delete twice",
			given: []domain.Payload{subscribed, domain.WebhookDeleted{Account: "acme"}},
			when:  domain.DeleteWebhook{Account: "acme"},
			err:   domain.NotFound,
		},
		{
			name: "delete a webhook never created",
			when: domain.DeleteWebhook{Account: "acme"},
			err:  domain.NotFound,
		},
		{
			name: "unknown command",
			when: domain.DeleteVideo{Account: "acme"},
			err:  domain.Internal,
		},
	})
}

func TestWebhookEvolve(t *testing.T) {
	tests := []struct {
		name  string
		given []domain.Payload
		want  domain.Webhook
	}{
		{name: "nothing happened", want: domain.Webhook{}},
		{
			name:  "subscribed",
			given: []domain.Payload{subscribed},
			want: domain.Webhook{
				ID: webhookID, Account: "acme", URL: "https://example.com/hooks/kino", SealedSecret: sealed,
				Events: []string{domain.EventVideoCompleted, domain.EventVideoFailed}, Created: true,
			},
		},
		{
			name:  "deleted",
			given: []domain.Payload{subscribed, domain.WebhookDeleted{Account: "acme"}},
			want: domain.Webhook{
				ID: webhookID, Account: "acme", URL: "https://example.com/hooks/kino", SealedSecret: sealed,
				Events: []string{domain.EventVideoCompleted, domain.EventVideoFailed}, Created: true, Deleted: true,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := given[domain.Webhook](t, webhookID, tc.given...)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("state = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestWebhookExists(t *testing.T) {
	live := given[domain.Webhook](t, webhookID, subscribed)
	gone := given[domain.Webhook](t, webhookID, subscribed, domain.WebhookDeleted{Account: "acme"})
	tests := []struct {
		name    string
		hook    domain.Webhook
		account string
		want    bool
	}{
		{name: "owner", hook: live, account: "acme", want: true},
		{name: "another account", hook: live, account: "other", want: false},
		{name: "deleted", hook: gone, account: "acme", want: false},
		{name: "never created", hook: domain.Webhook{}, account: "", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.hook.Exists(tc.account); got != tc.want {
				t.Fatalf("Exists(%q) = %v; want %v", tc.account, got, tc.want)
			}
		})
	}
}

func TestNormalizeEventsDoesNotChangeItsInput(t *testing.T) {
	in := []string{domain.EventVideoFailed, domain.EventVideoCompleted}
	out, err := domain.NormalizeEvents("test", in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{domain.EventVideoCompleted, domain.EventVideoFailed}; !reflect.DeepEqual(out, want) {
		t.Fatalf("NormalizeEvents = %v; want %v", out, want)
	}
	if in[0] != domain.EventVideoFailed || in[1] != domain.EventVideoCompleted {
		t.Fatalf("NormalizeEvents sorted the caller's slice: %v", in)
	}
}

func TestWebhookWants(t *testing.T) {
	only := given[domain.Webhook](t, webhookID, domain.WebhookSubscribed{Account: "acme", URL: "https://x.test/", Events: []string{domain.EventVideoFailed}, SealedSecret: "s"})
	gone := given[domain.Webhook](t, webhookID, domain.WebhookSubscribed{Account: "acme", URL: "https://x.test/", Events: []string{domain.EventVideoFailed}, SealedSecret: "s"}, domain.WebhookDeleted{Account: "acme"})
	for _, tc := range []struct {
		name string
		w    domain.Webhook
		kind string
		want bool
	}{
		{"subscribed kind", only, domain.EventVideoFailed, true},
		{"other kind", only, domain.EventVideoCompleted, false},
		{"test deliveries always", only, domain.EventWebhookTest, true},
		{"deleted", gone, domain.EventVideoFailed, false},
		{"deleted test", gone, domain.EventWebhookTest, false},
		{"never created", domain.Webhook{}, domain.EventWebhookTest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.Wants(tc.kind); got != tc.want {
				t.Fatalf("Wants(%s) = %v", tc.kind, got)
			}
		})
	}
}
