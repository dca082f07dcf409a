package transcoder

import (
	"context"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
)

// planTTL is how long an account's plan is trusted before it is read
// again: a plan change reaches the scheduler within it.
const planTTL = 30 * time.Second

// jobAccount is the account whose queue an UploadAccepted joins.
func jobAccount(e domain.Event) string {
	if d, ok := e.Data.(domain.UploadAccepted); ok {
		return d.Account
	}
	return ""
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
// cluster: its plan's TranscodeConcurrency. An account that cannot be read
// (NATS trouble, no such account) gets the free plan's.
func (t *Transcoder) limit(ctx context.Context, account string) int {
	now := time.Now()
	t.plans.mu.Lock()
	e, ok := t.plans.m[account]
	t.plans.mu.Unlock()
	if !ok {
		e.plan = domain.PlanFree
	}
	if !ok || now.Sub(e.read) > planTTL {
		events, _, err := t.cfg.Store.Load(ctx, domain.StreamID{Aggregate: domain.AggAccount, ID: account})
		if err != nil { // keep what we knew, and ask again next time
			t.cfg.Log.Warn("read account plan", "account", account, "err", err)
			return max(t.cfg.Plans.Limits(e.plan).TranscodeConcurrency, 1)
		}
		e = planEntry{plan: domain.PlanFree, read: now}
		if a := domain.Fold[domain.Account](events); a.Created {
			e.plan = a.Plan
		}
		t.plans.mu.Lock()
		if t.plans.m == nil || len(t.plans.m) > 10000 {
			t.plans.m = map[string]planEntry{}
		}
		t.plans.m[account] = e
		t.plans.mu.Unlock()
	}
	return max(t.cfg.Plans.Limits(e.plan).TranscodeConcurrency, 1)
}
