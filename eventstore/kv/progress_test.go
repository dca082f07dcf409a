package kv_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
)

func ptr[T any](v T) *T { return &v }

// A report with speed and time left reaches a follower; an older worker's
// plain number still reads as the progress alone; values that are too
// big, not numbers or out of range are never taken as they are.
func TestProgressReports(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := kv.OpenProgress(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Follow(ctx) }()
	wait := func(id string, cond func(kv.ProgressReport, bool) bool) kv.ProgressReport {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, ok := p.Live(id)
			if cond(r, ok) {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last seen %+v %v", id, r, ok)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	str := func(f *float64) string {
		if f == nil {
			return "nil"
		}
		return strings.TrimRight(strings.TrimRight(strconvF(*f), "0"), ".")
	}
	for _, tc := range []struct {
		name       string
		put        func(id string) error
		ok         bool
		p          float64
		speed, eta string
	}{
		{"report", func(id string) error {
			return p.Report(ctx, id, kv.ProgressReport{Progress: 0.42512, Speed: ptr(1.934), ETA: ptr(30.6)})
		}, true, 0.425, "1.93", "31"},
		{"report without speed", func(id string) error { return p.Set(ctx, id, 0.5) }, true, 0.5, "nil", "nil"},
		{"an older worker's plain number", func(id string) error { return p.PutRaw(ctx, id, []byte("0.250")) }, true, 0.25, "nil", "nil"},
		{"out of range", func(id string) error {
			return p.PutRaw(ctx, id, []byte(`{"p":7,"s":-1,"e":1e300}`))
		}, true, 1, "nil", "nil"},
		{"not a number", func(id string) error { return p.PutRaw(ctx, id, []byte("NaN")) }, false, 0, "", ""},
		{"garbage", func(id string) error { return p.PutRaw(ctx, id, []byte(`{"p":"x"}`)) }, false, 0, "", ""},
		{"too big", func(id string) error {
			return p.PutRaw(ctx, id, []byte(`{"p":0.5,"x":"`+strings.Repeat("a", 300)+`"}`))
		}, false, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := s.NewID()
			if tc.ok {
				if err := tc.put(id); err != nil {
					t.Fatal(err)
				}
				r := wait(id, func(_ kv.ProgressReport, ok bool) bool { return ok })
				if r.Progress != tc.p || str(r.Speed) != tc.speed || str(r.ETA) != tc.eta {
					t.Fatalf("read %v speed %s eta %s; want %v %s %s", r.Progress, str(r.Speed), str(r.ETA), tc.p, tc.speed, tc.eta)
				}
				return
			}
			// A good value first, then the bad one: the bad one replaces
			// it with nothing (put failures on new buckets are fine too).
			if err := p.Set(ctx, id, 0.5); err != nil {
				t.Fatal(err)
			}
			wait(id, func(_ kv.ProgressReport, ok bool) bool { return ok })
			if err := tc.put(id); err != nil {
				return // refused by the bucket itself
			}
			wait(id, func(_ kv.ProgressReport, ok bool) bool { return !ok })
		})
	}
}

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }
