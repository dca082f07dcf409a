package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// The API's own origin, for the URLs its answers carry when the operator
// configured none (--cdn-url, --base-url unset): the scheme and host the
// client used, so media URLs work from wherever the API was reached (a
// phone on the LAN at 192.168.1.5:8080, not localhost). The Host header is
// the client's to write: only a plain host name, IPv4 address or
// bracketed IPv6 address with an optional port is taken, lower-cased;
// anything else (spaces, quotes, userinfo, paths, huge values) is never
// reflected, and LocalOrigin stands in for it.

// maxHostLen bounds an accepted Host header: a 253-byte DNS name, a colon
// and a port.
const maxHostLen = 253 + 6

// origin is scheme://host[:port] of r as its client sees it: https when it
// came over TLS or through a trusted proxy saying so (secure).
func (s *Server) origin(r *http.Request) string {
	host, ok := cleanHost(r.Host)
	if !ok {
		return s.cfg.Origin.Local
	}
	scheme := "http"
	if s.secure(r) {
		scheme = "https"
	}
	return scheme + "://" + host
}

// cdnURL is {cdn_url} for the answers to r: --cdn-url when it was set,
// else this server's /cdn under the site's public URL (--base-url) when
// that was set, else at the request's origin.
func (s *Server) cdnURL(r *http.Request) string {
	if s.cfg.Origin.CDNURL != "" {
		return s.cfg.Origin.CDNURL
	}
	if s.cfg.Origin.PublicURL != "" {
		return s.cfg.Origin.PublicURL + "/cdn"
	}
	return s.origin(r) + "/cdn"
}

// cleanHost returns a Host header's value lower-cased when it is a host
// name, an IPv4 address or a bracketed IPv6 address (no zone), with an
// optional port 1..65535; ok is false for anything else.
func cleanHost(h string) (string, bool) {
	if h == "" || len(h) > maxHostLen {
		return "", false
	}
	h = strings.ToLower(h)
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", false
		}
		name, port = h[:end+1], h[end+1:]
		a, err := netip.ParseAddr(h[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i:]
	}
	if port != "" {
		p := strings.TrimPrefix(port, ":")
		n, err := strconv.Atoi(p)
		if len(port) < 2 || port[0] != ':' || len(p) > 5 || strings.Trim(p, "0123456789") != "" || err != nil || n < 1 || n > 65535 {
			return "", false
		}
	}
	if !strings.HasPrefix(name, "[") && !validHostName(name) {
		return "", false
	}
	return h, true
}

// validHostName accepts DNS names (letters, digits, hyphens, dot-separated
// labels of 1..63 bytes not starting or ending with a hyphen) and IPv4
// addresses.
func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	if ip := net.ParseIP(name); ip != nil {
		return ip.To4() != nil && strings.Count(name, ".") == 3
	}
	for label := range strings.SplitSeq(name, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
