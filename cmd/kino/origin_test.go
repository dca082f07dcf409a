package main

import (
	"net"
	"testing"
)

// Without --cdn-url, what has no request (webhook bodies, redeliveries)
// names the listen address when it is one address, else localhost.
func TestLocalOrigin(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 8080}, "http://192.168.1.5:8080"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://localhost:8080"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://localhost:8080"},
		{&net.TCPAddr{Port: 9000}, "http://localhost:9000"},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.ParseIP("fd00::5"), Port: 8080}, "http://[fd00::5]:8080"},
	} {
		if got := localOrigin(tc.addr); got != tc.want {
			t.Errorf("localOrigin(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
