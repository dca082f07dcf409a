package main

import (
	"net"
	"strconv"
	"strings"
)

// localOrigin is the origin of the listen address, for URLs made without a
// request (webhook bodies, redeliveries, the start-up log) when --cdn-url
// or --base-url is unset: http://<ip>:<port> when kino listens on one
// address (--addr 192.168.1.5:8080, --addr 127.0.0.1:8080), else (a
// wildcard: :8080, 0.0.0.0:8080, [::]:8080) http://localhost:<port>.
func localOrigin(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://localhost"
	}
	host := "localhost"
	if tcp.IP != nil && !tcp.IP.IsUnspecified() {
		host = tcp.IP.String()
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// siteOf is the site of an API base URL: without its trailing /v1.
func siteOf(base string) string {
	return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
}

// pageCDN is the media origin the dashboard's CSP must allow besides its
// own: --cdn-url's, else --base-url's site (media URLs then name it),
// else none (media come from the page's own origin).
func pageCDN(cdnURL, baseURL string) string {
	if cdnURL != "" || baseURL == "" {
		return cdnURL
	}
	return siteOf(baseURL) + "/cdn"
}
