package eventstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// An account's commands decide on a snapshot and the events after it: the
// state is the one the whole history folds to, after any number of
// commands, and stays so when the snapshot is garbage, of another shape,
// newer than the stream or of another stream's event. A worker reads
// snapshots but cannot write one.
func TestAccountSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	s := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	id := domain.AccountStream("acme")
	exec := func(cmd any) eventstore.Result[domain.Account] {
		t.Helper()
		res, err := eventstore.Execute[domain.Account](ctx, s, id, cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		return res
	}
	// folded is the state the whole history folds to.
	folded := func() domain.Account {
		t.Helper()
		events, _, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return domain.Fold[domain.Account](events)
	}
	same := func(what string) {
		t.Helper()
		cur, err := eventstore.Current[domain.Account](ctx, s, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := folded(); !reflect.DeepEqual(cur, want) {
			t.Fatalf("%s: decided on %+v, the history folds to %+v", what, cur, want)
		}
	}

	exec(domain.CreateAccount{Slug: "acme", Plan: domain.PlanFree})
	plans := []domain.Plan{domain.PlanPro, domain.PlanFree}
	for i := range 50 {
		key := fmt.Sprintf("key-%03d", i)
		exec(domain.IssueKey{KeyID: key, Hash: strings.Repeat("a", 64), Prefix: "svc_live_AAAA"})
		if i%3 != 0 {
			exec(domain.RevokeKey{KeyID: key})
		}
		exec(domain.ChangePlan{Plan: plans[i%2]})
		if i%20 == 0 {
			same(fmt.Sprintf("after %d rounds", i))
		}
	}
	same("after every round")

	nc, err := nats.Connect(srv.URL(), eventstoretest.Seed(t, srv, eventstore.RoleServe))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, eventstore.SnapshotBucket)
	if err != nil {
		t.Fatalf("no snapshot bucket: %v", err)
	}
	entry, err := kv.Get(ctx, "account.acme")
	if err != nil {
		t.Fatalf("no snapshot of the account: %v", err)
	}
	var snap struct {
		Version int             `json:"version"`
		Seq     uint64          `json:"seq"`
		Event   string          `json:"event"`
		State   json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(entry.Value(), &snap); err != nil || snap.Seq == 0 || snap.Event == "" {
		t.Fatalf("snapshot %s: %v", entry.Value(), err)
	}

	// The snapshot is what a decision starts from: one that says business
	// (where the stream says otherwise) is believed for the events it
	// covers. (Only kino serve writes the bucket.)
	history, last, _ := s.Load(ctx, id)
	lastID := history[len(history)-1].ID
	forged, _ := json.Marshal(map[string]any{"version": snap.Version, "seq": last, "event": lastID, "state": domain.Account{Slug: "acme", Plan: domain.PlanBusiness, Created: true}})
	if _, err := kv.Put(ctx, "account.acme", forged); err != nil {
		t.Fatal(err)
	}
	if cur, _ := eventstore.Current[domain.Account](ctx, s, id); cur.Plan != domain.PlanBusiness {
		t.Fatalf("the snapshot was not used: %+v", cur)
	}

	// Snapshots that cannot be used are ignored: the history decides.
	exec(domain.ChangePlan{Plan: domain.PlanPro}) // past the forged snapshot
	otherID := domain.AccountStream("globex")
	globex, err := eventstore.Execute[domain.Account](ctx, s, otherID, domain.CreateAccount{Slug: "globex", Plan: domain.PlanPro})
	if err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string]string{
		"garbage":                "not json",
		"another version":        fmt.Sprintf(`{"version":%d,"seq":%d,"event":%q,"state":{}}`, snap.Version+1, snap.Seq, snap.Event),
		"newer than stream":      fmt.Sprintf(`{"version":%d,"seq":%d,"event":%q,"state":{"Plan":"business"}}`, snap.Version, last+1000, lastID),
		"another's event":        fmt.Sprintf(`{"version":%d,"seq":%d,"event":%q,"state":{"Plan":"business"}}`, snap.Version, globex.LastSeq(), globex.Events[0].ID),
		"another event at a seq": fmt.Sprintf(`{"version":%d,"seq":%d,"event":%q,"state":{"Plan":"business"}}`, snap.Version, last, globex.Events[0].ID),
		"a state not json'd":     fmt.Sprintf(`{"version":%d,"seq":%d,"event":%q,"state":"x"}`, snap.Version, snap.Seq, snap.Event),
	} {
		if _, err := kv.Put(ctx, "account.acme", []byte(value)); err != nil {
			t.Fatal(err)
		}
		same(name)
		exec(domain.ChangePlan{Plan: domain.PlanBusiness})
		exec(domain.ChangePlan{Plan: domain.PlanFree})
		same(name + ", after commands")
	}
	// Another aggregate's event at a sequence this one has passed: the
	// snapshot's event is read by its sequence alone, and is not this
	// aggregate's.
	foreign := fmt.Sprintf(`{"version":%d,"seq":%d,"event":%q,"state":{"Plan":"business"}}`, snap.Version, globex.LastSeq(), globex.Events[0].ID)
	if _, err := kv.Put(ctx, "account.acme", []byte(foreign)); err != nil {
		t.Fatal(err)
	}
	same("another's earlier event")

	// A worker reads the bucket but cannot write it.
	wc, err := nats.Connect(srv.URL(), eventstoretest.Seed(t, srv, eventstore.RoleWorker))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	wjs, _ := jetstream.New(wc)
	wkv, err := wjs.KeyValue(ctx, eventstore.SnapshotBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wkv.Get(ctx, "account.acme"); err != nil {
		t.Fatalf("a worker cannot read a snapshot: %v", err)
	}
	refused, cancel := context.WithTimeout(ctx, time.Second) // a refused publish gets no answer
	defer cancel()
	if _, err := wkv.Put(refused, "account.acme", forged); err == nil {
		t.Fatal("a worker wrote a snapshot")
	}
}
