package kv_test

import (
	"context"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
)

// A direct upload record is created once, read with its revision, and
// updated only from the revision read: the second of two racing updates is
// a Conflict, as is a second Create.
func TestDirectUploads(t *testing.T) {
	ctx := context.Background()
	s := eventstoretest.Run(t)
	d, err := kv.OpenDirectUploads(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.Get(ctx, "nope"); !domain.IsKind(err, domain.NotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
	if err := d.Create(ctx, "k", []byte("fresh")); err != nil {
		t.Fatal(err)
	}
	if err := d.Create(ctx, "k", []byte("again")); !domain.IsKind(err, domain.Conflict) {
		t.Fatalf("second Create: %v", err)
	}
	val, rev, err := d.Get(ctx, "k")
	if err != nil || string(val) != "fresh" {
		t.Fatalf("Get: %q %v", val, err)
	}
	if err := d.Update(ctx, "k", []byte("used"), rev); err != nil {
		t.Fatal(err)
	}
	if err := d.Update(ctx, "k", []byte("used twice"), rev); !domain.IsKind(err, domain.Conflict) {
		t.Fatalf("Update from a stale revision: %v", err)
	}
	if val, _, _ := d.Get(ctx, "k"); string(val) != "used" {
		t.Fatalf("after the updates: %q", val)
	}
}
