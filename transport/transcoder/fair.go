package transcoder

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// planTTL is how long an account's plan is trusted before it is read
// again: a plan change reaches the scheduler within it.
const planTTL = 30 * time.Second

// jobAccount is the account whose queue an UploadAccepted, a
// TranscodeRetried or a CaptionTrackRequested joins; "" for any other event (refused).
func jobAccount(e domain.Event) string {
	switch d := e.Data.(type) {
	case domain.UploadAccepted:
		return d.Account
	case domain.TranscodeRetried:
		return d.Account
	case domain.CaptionTrackRequested:
		return d.Account
	case domain.ThumbnailRequested:
		return d.Account
	}
	return ""
}

// intakeFilters are the events that make jobs: an upload, a FAILED video
// queued again, captions to generate (captions.go) and a thumbnail to
// remake (thumbnail.go).
var intakeFilters = []string{
	domain.TypeFilter(domain.AggVideo, domain.TypeUploadAccepted),
	domain.TypeFilter(domain.AggVideo, domain.TypeTranscodeRetried),
	domain.TypeFilter(domain.AggVideo, domain.TypeCaptionTrackRequested),
	domain.TypeFilter(domain.AggVideo, domain.TypeThumbnailRequested),
}

type planEntry struct {
	plan domain.Plan
	read time.Time
}

// planCache remembers accounts' plans for planTTL.
type planCache struct {
	mu sync.Mutex
	m  map[string]planEntry
}

// limit is how many of account's videos may transcode at once across the
// cluster: its plan's TranscodeConcurrency, from a plan read at most
// planTTL ago. An account that cannot be read (NATS trouble) keeps what was
// known, or gets the free plan's.
func (t *Transcoder) limit(ctx context.Context, account string) int {
	t.plans.mu.Lock()
	e, ok := t.plans.m[account]
	t.plans.mu.Unlock()
	plan := e.plan
	if !ok || time.Since(e.read) > planTTL {
		var err error
		if plan, err = t.plan(ctx, account); err != nil { // ask again next time
			t.cfg.Log.Warn("read account plan", "account", account, "err", err)
			if !ok {
				plan = domain.PlanFree
			}
		}
	}
	return max(t.cfg.Plans.Limits(plan).TranscodeConcurrency, 1)
}

// plan reads account's plan now (an account not created, or on a plan
// this kino has no limits for, is on the free plan) and remembers it for
// limit.
func (t *Transcoder) plan(ctx context.Context, account string) (domain.Plan, error) {
	// Two events at most (its creation, its last plan change), not its
	// history.
	acc, err := eventstore.Current[domain.AccountPlan](ctx, t.cfg.Store, domain.AccountStream(account))
	if err != nil {
		return "", fmt.Errorf("load account %s: %w", account, err)
	}
	plan := acc.Plan
	if _, known := t.cfg.Plans[plan]; !known || !acc.Created {
		plan = domain.PlanFree
	}
	t.plans.mu.Lock()
	if t.plans.m == nil || len(t.plans.m) > 10000 {
		t.plans.m = map[string]planEntry{}
	}
	t.plans.m[account] = planEntry{plan: plan, read: time.Now()}
	t.plans.mu.Unlock()
	return plan, nil
}
