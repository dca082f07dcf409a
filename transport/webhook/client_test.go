package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestSign(t *testing.T) {
	// HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog"), a published test vector.
	got := Sign("key", []byte("The quick brown fox jumps over the lazy dog"))
	if want := "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if Sign("other", []byte("x")) == Sign("key", []byte("x")) {
		t.Fatal("different secrets, same signature")
	}
}

func TestInternalAddresses(t *testing.T) {
	for _, tc := range []struct {
		ip       string
		internal bool
	}{
		{"127.0.0.1", true}, {"127.9.9.9", true}, {"::1", true}, {"10.1.2.3", true}, {"172.16.0.1", true},
		{"192.168.1.1", true}, {"169.254.169.254", true}, {"fe80::1", true}, {"fc00::1", true}, {"224.0.0.1", true},
		{"ff02::1", true}, {"0.0.0.0", true}, {"::", true}, {"100.64.1.1", true}, {"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true}, {"240.1.1.1", true}, {"::127.0.0.1", true}, {"::ffff:0:7f00:1", true},
		{"64:ff9b:1::1", true}, {"2002:7f00:1::1", true}, {"2002:a9fe:a9fe::1", true}, {"fec0::1", true},
		{"64:ff9b::7f00:1", true}, {"100::1", true}, {"2002:5db8:d822::1", false}, {"64:ff9b::808:808", false},
		{"93.184.216.34", false}, {"1.1.1.1", false}, {"2606:4700::1111", false}, {"::ffff:8.8.8.8", false},
	} {
		t.Run(tc.ip, func(t *testing.T) {
			if got := internal(netip.MustParseAddr(tc.ip)); got != tc.internal {
				t.Fatalf("internal(%s) = %v", tc.ip, got)
			}
		})
	}
}

// The check runs on the address dialled, after resolution: a name that
// resolves to loopback is refused as the literal is.
func TestClientRefusesInternalAddressesAfterResolution(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	for _, url := range []string{srv.URL, "http://localhost" + port} {
		a := post(context.Background(), newClient(time.Second, false), url, "s", "webhook.test", "dlv_1", []byte("{}"))
		if !errors.Is(a.err, ErrRefusedAddress) || !strings.Contains(a.describe(time.Second), "address not allowed (private network)") {
			t.Fatalf("%s: %v (%s)", url, a.err, a.describe(time.Second))
		}
	}
	if a := post(context.Background(), newClient(time.Second, true), srv.URL, "s", "webhook.test", "dlv_1", []byte("{}")); !a.ok() {
		t.Fatalf("allowed: %+v", a)
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	a := post(context.Background(), newClient(time.Second, true), srv.URL, "s", "webhook.test", "dlv_1", []byte("{}"))
	if a.ok() || a.status != 302 || hits != 1 || !strings.Contains(a.describe(time.Second), "redirects are not followed") {
		t.Fatalf("redirect: %+v hits %d (%s)", a, hits, a.describe(time.Second))
	}
}

func TestDeliveryIDIsStable(t *testing.T) {
	a, b := DeliveryID("01EVENT", "01HOOK"), DeliveryID("01EVENT", "01HOOK")
	if a != b || !strings.HasPrefix(a, "dlv_") || DeliveryID("01EVENT", "01OTHER") == a {
		t.Fatalf("%s %s", a, b)
	}
}
