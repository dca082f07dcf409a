package domain_test

import (
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestStreamIDs(t *testing.T) {
	for _, tt := range []struct {
		id          domain.StreamID
		filter, sub string
	}{
		{domain.VideoStream("01ARZ3NDEKTSV4RRFFQ69G5FAV"), "video.01ARZ3NDEKTSV4RRFFQ69G5FAV.*", "video.01ARZ3NDEKTSV4RRFFQ69G5FAV." + domain.TypeUploadAccepted},
		{domain.AccountStream("acme"), "account.acme.*", "account.acme." + domain.TypeUploadAccepted},
		{domain.WebhookStream("01ARZ3NDEKTSV4RRFFQ69G5FAV"), "webhook.01ARZ3NDEKTSV4RRFFQ69G5FAV.*", "webhook.01ARZ3NDEKTSV4RRFFQ69G5FAV." + domain.TypeUploadAccepted},
		{domain.CollectionStream("acme", "news"), "collection.acme_news.*", "collection.acme_news." + domain.TypeUploadAccepted},
		{domain.StreamOf(domain.AggVideo, "x"), "video.x.*", "video.x." + domain.TypeUploadAccepted},
	} {
		if got := tt.id.Filter(); got != tt.filter {
			t.Errorf("%v.Filter() = %q, want %q", tt.id, got, tt.filter)
		}
		if got := tt.id.Subject(domain.TypeUploadAccepted); got != tt.sub {
			t.Errorf("%v.Subject() = %q, want %q", tt.id, got, tt.sub)
		}
	}
	if got := domain.TypeFilter(domain.AggAccount, domain.TypeKeyIssued); got != "account.*.KeyIssued" {
		t.Errorf("TypeFilter = %q", got)
	}
}
