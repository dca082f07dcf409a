package accounts

import (
	"context"
	"crypto/rand"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// What kino serve --dev and the operator CLI do to accounts beyond one
// command, beside eventstore.Execute.

// IssueKey generates an API key, records its hash (never the key) for
// account and returns the key, to be shown once, and its id.
func IssueKey(ctx context.Context, s Events, account, label string) (key, keyID string, err error) {
	if key, err = domain.NewAPIKey(rand.Reader); err != nil {
		return "", "", err
	}
	keyID = s.NewID()
	_, err = eventstore.Execute[domain.Account](ctx, s, domain.AccountStream(account),
		domain.IssueKey{KeyID: keyID, Hash: domain.HashKey(key), Prefix: key[:len(domain.KeyPrefix)+4], Label: label})
	return key, keyID, err
}

// DevAccount is what DevBootstrap created.
type DevAccount struct {
	Account, Collection string
	Key, KeyID          string // the key is shown once
}

// DevAccountSlug, DevCollectionSlug: the account (plan business) and the
// collection DevBootstrap creates.
const (
	DevAccountSlug    = "dev"
	DevCollectionSlug = "default"
)

// DevBootstrap creates account dev (plan business), its collection default
// and one key when the store holds no events at all. On a store that holds
// any it does nothing and reports created false.
func DevBootstrap(ctx context.Context, s interface {
	Events
	LastSeq(context.Context) (uint64, error)
}) (dev DevAccount, created bool, err error) {
	last, err := s.LastSeq(ctx)
	if err != nil || last > 0 {
		return DevAccount{}, false, err
	}
	dev = DevAccount{Account: DevAccountSlug, Collection: DevCollectionSlug}
	if _, err := eventstore.Execute[domain.Account](ctx, s, domain.AccountStream(dev.Account),
		domain.CreateAccount{Slug: dev.Account, Plan: domain.PlanBusiness}); err != nil {
		return DevAccount{}, false, err
	}
	if _, err := eventstore.Execute[domain.Collection](ctx, s, domain.CollectionStream(dev.Account, dev.Collection),
		domain.CreateCollection{Account: dev.Account, Slug: dev.Collection, Name: "Default"}); err != nil {
		return DevAccount{}, false, err
	}
	if dev.Key, dev.KeyID, err = IssueKey(ctx, s, dev.Account, "dev"); err != nil {
		return DevAccount{}, false, err
	}
	return dev, true, nil
}
