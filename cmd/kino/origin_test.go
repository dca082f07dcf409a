package main

import (
	"net"
	"testing"
)

// Without --cdn-url, what has no request (webhook bodies, redeliveries)
// names the listen address when it is one address, else localhost.
func TestLocalOrigin(t *testing.T) {
	t.Parallel()
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

func TestPageCDN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cdn, base, want string }{
		{"", "", ""},
		{"https://media.example.com/cdn", "https://kino.example.com/v1", "https://media.example.com/cdn"},
		{"", "https://kino.example.com/v1/", "https://kino.example.com/cdn"},
		{"", "https://example.com/kino/v1", "https://example.com/kino/cdn"},
	} {
		if got := pageCDN(tc.cdn, tc.base); got != tc.want {
			t.Errorf("pageCDN(%q, %q) = %q, want %q", tc.cdn, tc.base, got, tc.want)
		}
	}
}
