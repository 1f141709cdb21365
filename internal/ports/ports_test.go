package ports

import (
	"fmt"
	"net"
	"testing"
)

// TestBaseOutsideEphemeralAndNotReused: every base's block lies outside
// the kernel's ephemeral range, its ports can be bound, and no port is
// handed out twice (CI stop 39: a validator's port taken before it bound).
func TestBaseOutsideEphemeralAndNotReused(t *testing.T) {
	elo, ehi := ephemeral()
	seen := map[int]bool{}
	for range 50 {
		b := Base(4)
		if b == 0 {
			t.Fatal("no base")
		}
		for i := range 4 {
			for off := range 4 {
				p := b + 10*i + off
				if p >= elo && p <= ehi {
					t.Fatalf("port %d inside the ephemeral range %d–%d", p, elo, ehi)
				}
				if seen[p] {
					t.Fatalf("port %d handed out twice", p)
				}
				seen[p] = true
			}
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", b+2))
		if err != nil {
			t.Fatalf("base %d: HTTP port: %v", b, err)
		}
		l.Close()
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", b+1))
		if err != nil {
			t.Fatalf("base %d: QUIC port: %v", b, err)
		}
		u.Close()
	}
	for range 50 {
		for _, nw := range []string{"tcp", "udp"} {
			p, err := Free(nw)
			if err != nil {
				t.Fatal(err)
			}
			if p >= elo && p <= ehi || seen[p] {
				t.Fatalf("%s port %d: in the ephemeral range or handed out before", nw, p)
			}
			seen[p] = true
		}
	}
}

// TestBaseBusyPortSkipped: a block with a port some listener holds is not
// handed out.
func TestBaseBusyPortSkipped(t *testing.T) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", low+2))
	if err != nil {
		t.Skipf("port %d busy already: %v", low+2, err)
	}
	defer l.Close()
	if bindable(low, 1) {
		t.Fatalf("block at %d claimable with %d held", low, low+2)
	}
}

func TestBadArguments(t *testing.T) {
	if _, err := Free("sctp"); err == nil {
		t.Fatal("sctp accepted")
	}
	if b := Base(0); b != 0 {
		t.Fatalf("Base(0) = %d", b)
	}
	if b := Base(1 << 20); b != 0 {
		t.Fatalf("Base(1<<20) = %d", b)
	}
}
