package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address requests without a valid key are counted
// under: the peer's IP, or, when the peer is a proxy the operator trusts
// (--trusted-proxies), the address that proxy reports in X-Forwarded-For
// (the rightmost entry that is not itself a trusted proxy). Without
// trusted proxies X-Forwarded-For is ignored: any client can write it.
// IPv6 addresses count by their /64, which one host usually holds whole.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	addr := peerAddr(r.RemoteAddr)
	if addr.IsValid() && len(trusted) > 0 && inPrefixes(addr, trusted) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a malformed entry: stop at the last proxy we trust
			}
			addr = hop.Unmap()
			if !inPrefixes(addr, trusted) {
				break
			}
		}
	}
	if !addr.IsValid() {
		return r.RemoteAddr
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR
// prefixes (--trusted-proxies).
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, &net.ParseError{Type: "IP address or CIDR prefix", Text: part}
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
