package quic

// SmallReceiveBuffer and PacedPushWindow decide the default push pacing
// ([Server.PushWindow]). quic-go asks for a 7 MiB UDP receive buffer and
// gets it as root (SO_RCVBUFFORCE); an unprivileged process gets at most
// net.core.rmem_max, often 208 KiB. With a 7 MiB buffer a full-block push
// to 5,000 runners on one host lost few or no answers and pacing did not
// lower its p99; with 208 KiB the burst of answers overflowed the buffer
// and a window of 256 cut the p99 from 4.9 s to 2.0 s (window 512 was
// already too wide; adapters/quic/scale RESULTS.md).
const (
	// SmallReceiveBuffer is the buffer, in bytes as the kernel reports it
	// (Linux reports twice the size set), below which pushes are paced.
	SmallReceiveBuffer = 2 << 20
	// PacedPushWindow is the window a small buffer gets.
	PacedPushWindow = 256
)

// windowForBuffer is the default push window for a receive buffer of n
// bytes: PacedPushWindow below SmallReceiveBuffer, unpaced (-1) at or above
// it or when the size is unknown (n < 0).
func windowForBuffer(n int) int {
	if n >= 0 && n < SmallReceiveBuffer {
		return PacedPushWindow
	}
	return -1
}
