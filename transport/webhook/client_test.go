package webhook

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
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

// Go's errors name the resolver, the local address and port, and the
// address dialled; the tenant's log gets a fixed phrase instead.
func TestDescribeHidesServerAddresses(t *testing.T) {
	local := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 53124}
	remote := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 443}
	op := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://hooks.example.com/x", Err: &net.OpError{Op: "dial", Net: "tcp", Source: local, Addr: remote, Err: err}}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{op(&net.DNSError{Err: "no such host", Name: "hooks.example.com", Server: "10.255.255.53:53", IsNotFound: true}), msgNoSuchHost},
		{op(&net.DNSError{Err: "i/o timeout", Name: "hooks.example.com", Server: "10.255.255.53:53", IsTimeout: true}), msgDNSTimeout},
		{op(&net.DNSError{Err: "server misbehaving", Name: "hooks.example.com", Server: "[fd00::53]:53"}), msgDNS},
		{op(os.NewSyscallError("connect", syscall.ECONNREFUSED)), msgRefused},
		{op(os.NewSyscallError("read", syscall.ECONNRESET)), msgReset},
		{op(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), msgUnreachable},
		{op(fmt.Errorf("%w: 10.1.2.3 is not a public address", ErrRefusedAddress)), msgRefusedAddress},
		{&url.Error{Op: "Post", URL: "https://hooks.example.com/x", Err: context.DeadlineExceeded}, "no answer from the receiver within the 10s timeout"},
		{&url.Error{Op: "Post", URL: "https://hooks.example.com/x", Err: io.EOF}, msgClosed},
		{&url.Error{Op: "Post", URL: "https://hooks.example.com/x", Err: x509.UnknownAuthorityError{}}, msgUnknownCA},
		{op(errors.New("something new from 10.1.2.3:443")), msgUnreachableAny},
	} {
		got := attempt{err: tc.err}.describe(10 * time.Second)
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.want)
		}
		if m := addressLike.FindString(got); m != "" {
			t.Errorf("%q shows %q", got, m)
		}
	}
}

// A receiver that never answers is reported with the sender's timeout.
func TestDescribeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	a := post(context.Background(), newClient(50*time.Millisecond, true), srv.URL, "s", "webhook.test", "dlv_1", []byte("{}"))
	if got := a.describe(50 * time.Millisecond); got != "no answer from the receiver within the 50ms timeout" {
		t.Fatalf("%q (%v)", got, a.err)
	}
}

func TestValidDeliveryID(t *testing.T) {
	if id := DeliveryID("01EVENT", "01HOOK"); !validDeliveryID(id) {
		t.Fatalf("%s refused", id)
	}
	for _, id := range []string{"", "dlv_", "dlv_0123456789abcdef0123456", "dlv_0123456789abcdef0123456G", "xyz_0123456789abcdef01234567", "dlv_0123456789abcdef01234.>7"} {
		if validDeliveryID(id) {
			t.Errorf("%q accepted", id)
		}
	}
}
