package main

import (
	"net"
	"strconv"
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
