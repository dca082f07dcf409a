package respond

import (
	"net"
	"syscall"
)

// setCork sets TCP_CORK on c and reports whether it could.
func setCork(c *net.TCPConn, on bool) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, v)
	}); err != nil {
		return false
	}
	return serr == nil
}
