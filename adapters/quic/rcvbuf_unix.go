//go:build unix

package quic

import (
	"net"
	"syscall"
)

// receiveBuffer is the socket's SO_RCVBUF as the kernel reports it, or -1
// when c is not a socket it can ask.
func receiveBuffer(c net.PacketConn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	n, serr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) {
		n, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	}); err != nil || serr != nil {
		return -1
	}
	return n
}
