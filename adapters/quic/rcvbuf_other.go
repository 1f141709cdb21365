//go:build !unix

package quic

import "net"

// receiveBuffer is unknown here (-1): pushes default to unpaced.
func receiveBuffer(net.PacketConn) int { return -1 }
