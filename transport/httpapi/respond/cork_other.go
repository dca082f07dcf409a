//go:build !linux

package respond

import "net"

// setCork does nothing where TCP_CORK is not Linux's.
func setCork(*net.TCPConn, bool) bool { return false }
