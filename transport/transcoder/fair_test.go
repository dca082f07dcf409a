package transcoder

import (
	"context"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/media"
)

// An account's transcode limit is its plan's concurrency, read from its
// events; an account kino does not know gets the free plan's.
func TestLimitFollowsThePlan(t *testing.T) {
	t.Parallel()
	store := eventstoretest.Run(t)
	ctx := context.Background()
	for slug, plan := range map[string]domain.Plan{"f": domain.PlanFree, "p": domain.PlanPro, "b": domain.PlanBusiness} {
		if _, err := eventstore.Execute[domain.Account](ctx, store, domain.StreamID{Aggregate: domain.AggAccount, ID: slug},
			domain.CreateAccount{Slug: slug, Plan: plan}); err != nil {
			t.Fatal(err)
		}
	}
	mediaStore, err := media.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	progress, err := kv.OpenProgress(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	plans := domain.DefaultPlans()
	pro := plans[domain.PlanPro]
	pro.TranscodeConcurrency = 3 // --transcode-concurrency-pro 3
	plans[domain.PlanPro] = pro
	tc, err := New(Config{Store: store, Jobs: queue.New(store), Media: mediaStore, Progress: progress, Plans: plans})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		account string
		want    int
	}{
		{"f", 1},
		{"p", 3},
		{"b", 4},
		{"nobody", 1},
	}
	for _, tt := range tests {
		t.Run(tt.account, func(t *testing.T) {
			if got := tc.limit(ctx, tt.account); got != tt.want {
				t.Fatalf("limit(%s) = %d, want %d", tt.account, got, tt.want)
			}
		})
	}
}
