package webhook

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/seal"
)

// addressLike matches an IPv4 or IPv6 address, a :port, or localhost.
var addressLike = regexp.MustCompile(`\d{1,3}(\.\d{1,3}){3}|:\d+|[0-9a-fA-F]*:[0-9a-fA-F]*:[0-9a-fA-F]*|localhost`)

const testSecret = "whsec_0123456789abcdef0123456789abcdef"

// testKey seals the subscriptions' secrets, as kino serve's secret key does.
var testKey = func() *seal.Key {
	k, err := seal.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return k
}()

// subscribe writes a subscription of account to url, as the API does.
func subscribe(t *testing.T, store *eventstore.Store, account, url string) projections.Webhook {
	t.Helper()
	id := store.NewID()
	events := []string{domain.EventVideoCompleted}
	sealed, err := testKey.Seal(id, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	_, err = eventstore.Execute[domain.Webhook](context.Background(), store, domain.StreamID{Aggregate: domain.AggWebhook, ID: id},
		domain.SubscribeWebhook{Account: account, URL: url, Events: events, SealedSecret: sealed})
	if err != nil {
		t.Fatal(err)
	}
	return projections.Webhook{ID: id, Account: account, URL: url, Events: events, SealedSecret: sealed}
}

// sendTests queues n test deliveries to w and returns their ids in order.
func sendTests(t *testing.T, store *eventstore.Store, w projections.Webhook, n int) []string {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		id, err := Tester{Store: store, Queue: queue.New(store)}.SendTest(context.Background(), w)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// runDeliverer sends deliveries until the test ends.
func runDeliverer(t *testing.T, d *Deliverer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func newTestDeliverer(t *testing.T, cfg Config) *Deliverer {
	t.Helper()
	if cfg.Secrets == nil {
		cfg.Secrets = testKey
	}
	d, err := NewDeliverer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// outcome is one recorded attempt.
type outcome struct {
	delivery string
	attempt  int
	ok       bool
	err      string
	gaveUp   bool
}

// recorded reads the attempts recorded on a subscription's stream, oldest first.
func recorded(t *testing.T, store *eventstore.Store, hookID string) []outcome {
	t.Helper()
	var out []outcome
	err := store.Scan(context.Background(), []string{domain.AggWebhook + "." + hookID + ".>"}, func(e domain.Event) error {
		switch d := e.Data.(type) {
		case domain.DeliverySucceeded:
			out = append(out, outcome{delivery: d.DeliveryID, attempt: d.Attempt, ok: true})
		case domain.DeliveryFailed:
			out = append(out, outcome{delivery: d.DeliveryID, attempt: d.Attempt, err: d.Error, gaveUp: d.GaveUp})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRecorded polls until the subscription has n recorded attempts. Every
// poll is a scan (an ordered consumer the server keeps for a few seconds),
// hence not more often than every 50 ms.
func waitRecorded(t *testing.T, store *eventstore.Store, hookID string, n int) []outcome {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		got := recorded(t, store, hookID)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d attempts recorded, want %d: %+v", len(got), n, got)
		}
		<-tick.C
	}
}

// A receiver that never answers holds one sender, not all of them: the
// 40 test deliveries of account A wait behind A's first, and B's delivery
// goes out while that first POST still hangs. The senders are two
// processes' worth (two connections, two senders each) sharing the
// durable, as kino serve and kino worker do.
func TestStalledReceiverDelaysOnlyItsOwnSubscription(t *testing.T) {
	srv := eventstoretest.Server(t, t.TempDir())
	url, auth := srv.URL(), srv.Auth(eventstore.RoleServe)
	store, other := eventstoretest.Open(t, url, auth), eventstoretest.Open(t, url, auth)
	var mu sync.Mutex
	stalled := 0
	release := make(chan struct{})
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		stalled++
		mu.Unlock()
		select { // never answers while the test runs
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(a.Close)
	arrived := make(chan struct{}, 10)
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(b.Close)
	t.Cleanup(func() { close(release) }) // runs before the servers close

	hookA, hookB := subscribe(t, store, "acme", a.URL), subscribe(t, store, "other", b.URL)
	sendTests(t, store, hookA, 40) // queued first: the senders meet them first
	sendTests(t, store, hookB, 1)
	for _, st := range []*eventstore.Store{store, other} {
		runDeliverer(t, newTestDeliverer(t, Config{Store: st, Queue: queue.New(st), Workers: 2, Timeout: 10 * time.Minute, AllowPrivate: true}))
	}

	select {
	case <-arrived:
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("B's delivery did not arrive; A's receiver holds %d POSTs", stalled)
	}
	// B may arrive before A's first POST does (the senders run at once):
	// wait for that one, then A's receiver must hold exactly it.
	held := func() int {
		mu.Lock()
		defer mu.Unlock()
		return stalled
	}
	for deadline := time.Now().Add(time.Minute); held() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("A's first delivery never reached its receiver")
		}
		time.Sleep(5 * time.Millisecond) // polling the receiver's count
	}
	if n := held(); n != 1 {
		t.Fatalf("A's receiver got %d POSTs at once, want 1 (one in flight per subscription)", n)
	}
	if got := waitRecorded(t, store, hookB.ID, 1); !got[0].ok || got[0].attempt != 1 {
		t.Fatalf("B's delivery: %+v", got)
	}
}

// A delivery handed back because its subscription is busy has not been
// attempted: its attempt numbers count POSTs only. The receiver fails its
// first POST and holds it until the other delivery has been handed back
// twice, then succeeds; with one retry allowed, a handback counted as an
// attempt would make the second delivery give up.
func TestBusyHandbackDoesNotUseAnAttempt(t *testing.T) {
	store := eventstoretest.Run(t)
	handedBack := make(chan string, 100)
	var mu sync.Mutex
	var posts []string
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts = append(posts, r.Header.Get(HeaderDelivery))
		first := len(posts) == 1
		mu.Unlock()
		if !first {
			w.WriteHeader(http.StatusOK)
			return
		}
		// Hold the first POST until the other delivery came back busy twice.
		for n := 0; n < 2; n++ {
			select {
			case <-handedBack:
			case <-time.After(time.Minute):
				t.Error("no busy handback")
			}
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(rc.Close)
	hook := subscribe(t, store, "acme", rc.URL)
	ids := sendTests(t, store, hook, 2)
	d := newTestDeliverer(t, Config{Store: store, Queue: queue.New(store), Workers: 4, Timeout: 2 * time.Minute, AllowPrivate: true,
		Backoff: []time.Duration{50 * time.Millisecond}})
	d.onBusy = func(deliveryID string) { handedBack <- deliveryID }
	runDeliverer(t, d)

	got := waitRecorded(t, store, hook.ID, 3)
	mu.Lock()
	first := posts[0]
	mu.Unlock()
	second := ids[0]
	if first == ids[0] {
		second = ids[1]
	}
	want := map[string][]int{first: {1, 2}, second: {1}}
	have := map[string][]int{}
	for _, o := range got {
		have[o.delivery] = append(have[o.delivery], o.attempt)
		if o.gaveUp {
			t.Fatalf("gave up: %+v", got)
		}
	}
	for id, w := range want {
		if len(have[id]) != len(w) || have[id][0] != w[0] || have[id][len(w)-1] != w[len(w)-1] {
			t.Fatalf("attempts of %s: %v, want %v (all: %+v)", id, have[id], w, got)
		}
	}
	if last := got[len(got)-1]; !last.ok {
		t.Fatalf("last attempt %+v", last)
	}
}

// The deliveries log is read by the tenant: its errors name what went
// wrong with the receiver and carry no address or port of the server's
// side (resolver, local port, resolved internal address).
func TestDeliveryErrorsCarryNoServerAddresses(t *testing.T) {
	store := eventstoretest.Run(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/hook" // nothing listens here any more
	l.Close()
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
	t.Cleanup(live.Close)
	port := live.URL[strings.LastIndex(live.URL, ":"):]

	for _, tc := range []struct {
		name, url    string
		allowPrivate bool
		want         string
	}{
		{"dns", "http://no-such-host.invalid/hook", true, "could not resolve the receiver's host name"},
		{"refused", closed, true, msgRefused},
		{"private literal", live.URL, false, msgRefusedAddress},
		{"private by name", "http://localhost" + port, false, msgRefusedAddress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook := subscribe(t, store, "acme", tc.url)
			sendTests(t, store, hook, 1)
			ctx, cancel := context.WithCancel(context.Background())
			d := newTestDeliverer(t, Config{Store: store, Queue: queue.New(store), Workers: 1, Timeout: 30 * time.Second, AllowPrivate: tc.allowPrivate, Backoff: []time.Duration{}})
			done := make(chan struct{})
			go func() { defer close(done); _ = d.Run(ctx) }()
			got := waitRecorded(t, store, hook.ID, 1)
			cancel()
			<-done
			if len(got) != 1 || !got[0].gaveUp || !strings.HasPrefix(got[0].err, tc.want) {
				t.Fatalf("recorded %+v, want an error starting %q", got, tc.want)
			}
			if m := addressLike.FindString(got[0].err); m != "" {
				t.Fatalf("error %q shows %q", got[0].err, m)
			}
		})
	}
}

// A NATS server restarted under a running sender (a single server, whose
// send-lock bucket lives in memory and is gone after the restart) does
// not stop the deliveries: those queued after the restart arrive, each
// once, with no restart of the sender. They were postponed for good
// ("no response from stream") when the lock bucket was opened only once.
func TestDeliveriesGoOnAfterTheNATSServerRestarts(t *testing.T) {
	dir := t.TempDir()
	srv := eventstoretest.Server(t, dir)
	store := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	var mu sync.Mutex
	got := map[string]int{}
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get(HeaderDelivery)]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	hook := subscribe(t, store, "acme", rc.URL)
	runDeliverer(t, newTestDeliverer(t, Config{Store: store, Queue: queue.New(store), Workers: 2, Timeout: 10 * time.Second, AllowPrivate: true,
		Backoff: []time.Duration{50 * time.Millisecond}}))
	before := sendTests(t, store, hook, 1)
	waitRecorded(t, store, hook.ID, 1)

	eventstoretest.Restart(t, srv, dir)
	// The restarted server recovers its streams before it answers; on a
	// loaded machine that outlasts one publish's timeout.
	eventstoretest.Eventually(t, "the deliveries stream answers again", func() bool {
		_, err := queue.New(store).DeliveriesQueued(context.Background())
		return err == nil
	})
	after := sendTests(t, store, hook, 3)
	outcomes := waitRecorded(t, store, hook.ID, 4)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range append(before, after...) {
		if got[id] != 1 {
			t.Errorf("delivery %s arrived %d times, want once (all: %v)", id, got[id], got)
		}
	}
	for _, o := range outcomes {
		if !o.ok || o.attempt != 1 {
			t.Errorf("recorded %+v, want a first attempt that succeeded", o)
		}
	}
}
