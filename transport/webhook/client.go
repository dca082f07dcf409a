package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Headers of every delivery.
const (
	HeaderSignature = "x-svc-signature" // lowercase hex HMAC-SHA256 of the body with the secret
	HeaderEvent     = "x-svc-event"     // video.completed, video.failed or webhook.test
	HeaderDelivery  = "x-svc-delivery"  // stable across retries: dedupe on it
)

// MaxResponseBody is how much of a receiver's answer is read.
const MaxResponseBody = 64 << 10

// Sign is the x-svc-signature of body: lowercase hex HMAC-SHA256 keyed with
// the subscription's secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// ErrRefusedAddress is returned for a receiver whose address resolves to a
// loopback, private, link-local, multicast or otherwise internal IP.
var ErrRefusedAddress = errors.New("refused address")

// Ranges that are not public unicast although net/netip has no predicate
// for them.
var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),          // IPv4-compatible
	netip.MustParsePrefix("fec0::/10"),      // site-local
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
}

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
)

// internal reports whether ip is not a public unicast address. IPv6 is
// allowed only in 2000::/3 (and well-known NAT64), and the IPv4 address
// that 6to4 and NAT64 addresses carry is checked as well.
func internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range internalPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return internal(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(ip):
			return internal(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		case !globalUnicast6.Contains(ip):
			return true
		}
	}
	return false
}

// newClient is the delivery HTTP client: no proxy, no redirects, a timeout
// for the whole exchange, and (unless allowPrivate) a dialer that refuses
// internal addresses. The check runs on the IP actually dialled, after DNS
// resolution, so a name that resolves to 127.0.0.1 is refused too.
func newClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
			}
			if internal(ap.Addr()) {
				// Only the operator's log gets the address; the
				// deliveries log (seen by the tenant) does not: it would
				// map the operator's internal names.
				return fmt.Errorf("%w: %s is not a public address", ErrRefusedAddress, ap.Addr())
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// attempt is the outcome of one POST.
type attempt struct {
	status   int // 0 when no response came
	err      error
	duration time.Duration
}

func (a attempt) ok() bool { return a.err == nil && a.status >= 200 && a.status < 300 }

// describe is the attempt's error for the deliveries log, which the
// tenant reads. It says what went wrong in the receiver's terms and never
// quotes Go's error, which can carry the server's DNS resolver address, its
// local address and port, or the internal address a name resolved to. The
// full error goes to the operator's log only.
func (a attempt) describe(timeout time.Duration) string {
	switch {
	case a.err != nil:
		return describeErr(a.err, timeout)
	case a.status >= 300 && a.status < 400:
		return "HTTP " + strconv.Itoa(a.status) + " (redirects are not followed)"
	case !a.ok():
		return "HTTP " + strconv.Itoa(a.status)
	}
	return ""
}

// Wording of delivery errors (docs/webhooks.md lists them).
const (
	msgRefusedAddress = "address not allowed (private network): the receiver's address is not a public one; the operator can allow it with --webhooks-allow-private"
	msgNoSuchHost     = "could not resolve the receiver's host name: no such host"
	msgDNSTimeout     = "could not resolve the receiver's host name: the lookup timed out"
	msgDNS            = "could not resolve the receiver's host name"
	msgRefused        = "connection refused by the receiver"
	msgReset          = "connection reset by the receiver"
	msgUnreachable    = "the receiver's address is unreachable"
	msgClosed         = "the receiver closed the connection without an answer"
	msgUnknownCA      = "TLS: the receiver's certificate is signed by an unknown authority"
	msgWrongHost      = "TLS: the receiver's certificate is not valid for its host name"
	msgBadCert        = "TLS: the receiver's certificate is not valid (expired, not yet valid, or not a server certificate)"
	msgNotTLS         = "TLS: the receiver did not answer with TLS"
	msgTLS            = "TLS: the handshake with the receiver failed"
	msgBadAnswer      = "the receiver's answer is not valid HTTP"
	msgUnreachableAny = "could not reach the receiver"
)

func describeErr(err error, timeout time.Duration) string {
	var (
		dns  *net.DNSError
		ne   net.Error
		ua   x509.UnknownAuthorityError
		he   x509.HostnameError
		ci   x509.CertificateInvalidError
		rh   tls.RecordHeaderError
		alrt tls.AlertError
	)
	text := err.Error()
	switch {
	case errors.Is(err, ErrRefusedAddress):
		return msgRefusedAddress
	case errors.As(err, &dns):
		switch {
		case dns.IsNotFound:
			return msgNoSuchHost
		case dns.IsTimeout:
			return msgDNSTimeout
		}
		return msgDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return msgRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return msgReset
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return msgUnreachable
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "no answer from the receiver within the " + timeout.String() + " timeout"
	case errors.As(err, &ua):
		return msgUnknownCA
	case errors.As(err, &he):
		return msgWrongHost
	case errors.As(err, &ci):
		return msgBadCert
	case errors.As(err, &rh):
		return msgNotTLS
	case errors.As(err, &alrt), strings.Contains(text, "tls: "):
		return msgTLS
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return msgClosed
	case strings.Contains(text, "malformed HTTP"):
		return msgBadAnswer
	}
	return msgUnreachableAny
}

// post sends one signed delivery.
func post(ctx context.Context, client *http.Client, url, secret, kind, deliveryID string, body []byte) attempt {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytesReader(body))
	if err != nil {
		return attempt{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "kino-webhooks/1")
	req.Header[HeaderSignature] = []string{Sign(secret, body)}
	req.Header[HeaderEvent] = []string{kind}
	req.Header[HeaderDelivery] = []string{deliveryID}
	resp, err := client.Do(req)
	if err != nil {
		return attempt{err: err, duration: time.Since(start)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBody))
	resp.Body.Close()
	return attempt{status: resp.StatusCode, duration: time.Since(start)}
}
