package cometbft

import (
	"fmt"
	"math/rand/v2"
	"net"

	cmtlog "github.com/cometbft/cometbft/libs/log"
)

// Helpers for harnesses that run several nodes in one process (the
// devnets, cmd/internal/devnet, and the tests): a free port block, the
// first failure among the nodes (FirstFailure, health.go), and CometBFT's
// logger type named without importing CometBFT (only this package does,
// D29).

// CometLogger is CometBFT's logger (NodeConfig.CometLogger, NewLogger).
type CometLogger = cmtlog.Logger

// FreeBasePort picks a NetworkOptions.BasePort whose n validators' ports
// (TCP p2p, HTTP and RPC, UDP QUIC: BasePort+10·i, +2, +3, +1) are free on loopback
// now; 0 if none was found in 100 tries (NewNetwork's default then).
func FreeBasePort(n int) int {
	for range 100 {
		base := 20000 + 10*rand.IntN(4000)
		if portsFree(base, n) {
			return base
		}
	}
	return 0
}

func portsFree(base, n int) bool {
	for i := range n {
		for _, off := range []int{0, 2, 3} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+10*i+off))
			if err != nil {
				return false
			}
			l.Close()
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", base+10*i+1))
		if err != nil {
			return false
		}
		u.Close()
	}
	return true
}
