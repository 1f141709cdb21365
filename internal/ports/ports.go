// Package ports picks loopback ports for harnesses that start validators
// whose addresses must be known before they listen (a genesis names them,
// or a child process is told them): a port that is free now and that
// nothing else is likely to take before the validator binds it.
//
// The kernel hands out the ephemeral range (Linux:
// /proc/sys/net/ipv4/ip_local_port_range, 32768–60999 by default) to every
// outgoing connection and to every bind of port 0, so a port picked there
// and released can be taken by any client on the machine before the
// validator binds it (CI, stop 39: a validator's HTTP port 57172 "address
// already in use"). Ports here are picked below that range, a 10-port
// slot (ports 10·s … 10·s+9) at a time. A slot handed out is claimed for
// the process's lifetime: not handed out again by this process, nor, on
// unix, by another one using this package (go test runs packages in
// parallel) while this one lives (a flock(2) lock per slot in
// $TMPDIR/cip11-ports).
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// low is the lowest port handed out: above the registered services most
// machines run.
const low = 10000

var (
	mu      sync.Mutex
	claimed = map[int]bool{} // slots this process holds
)

// claim takes the slot starting at slot for this process's lifetime: false
// if this process holds it already, or another process does (lockSlot).
func claim(slot int) bool {
	if claimed[slot] || !lockSlot(slot) {
		return false
	}
	claimed[slot] = true
	return true
}

// span is the range [lo, hi) ports are picked from: below the ephemeral
// range when there is room, else above it.
func span() (lo, hi int) {
	elo, ehi := ephemeral()
	if elo-low >= 5000 {
		return low, elo
	}
	if 65536-(ehi+1) >= 5000 {
		return ehi + 1, 65536
	}
	return low, 65536 // no room outside it: at least not reused in-process
}

// ephemeral is the kernel's ephemeral port range (Linux's default where it
// cannot be read).
func ephemeral() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	a, err1 := strconv.Atoi(f[0])
	z, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || a < 1 || z < a || z > 65535 {
		return lo, hi
	}
	return a, z
}

// Base returns a base port B, a multiple of 10, such that, for every
// i < n, the TCP ports B+10·i, +2 and +3 and the UDP port B+10·i+1 are free
// on 127.0.0.1 now (a network validator's p2p, HTTP, RPC and QUIC ports),
// and claims their slots; 0 when 200 tries found none.
func Base(n int) int {
	lo, hi := span()
	start := (lo + 9) / 10 * 10       // slots start at multiples of 10 in every process
	if n < 1 || 10*(n+1) > hi-start { // room for at least one base
		return 0
	}
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		base := start + 10*rand.IntN((hi-start-10*n)/10)
		if !bindable(base, n) || !claimAll(base, n) {
			continue
		}
		return base
	}
	return 0
}

// claimAll claims the n slots from base; on a refusal it keeps those it
// took (a slot half-held is not handed out again here either).
func claimAll(base, n int) bool {
	for i := range n {
		if !claim(base + 10*i) {
			return false
		}
	}
	return true
}

// bindable reports whether the n slots from base have their validator
// ports free now.
func bindable(base, n int) bool {
	for i := range n {
		for off := range 4 {
			network := "tcp"
			if off == 1 {
				network = "udp"
			}
			if !free(network, base+10*i+off) {
				return false
			}
		}
	}
	return true
}

// Free returns a port free now on 127.0.0.1 for network ("tcp" or "udp"),
// and claims its slot.
func Free(network string) (int, error) {
	if network != "tcp" && network != "udp" {
		return 0, fmt.Errorf("ports: network %q (tcp or udp)", network)
	}
	lo, hi := span()
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		if !claimed[p-p%10] && free(network, p) && claim(p-p%10) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("ports: no free %s port in %d–%d after 200 tries", network, lo, hi-1)
}

func free(network string, port int) bool {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if network == "udp" {
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}
