package cometbft

import (
	"github.com/cip11/cip11/internal/ports"

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
// (TCP p2p, HTTP and RPC, UDP QUIC: BasePort+10·i, +2, +3, +1) are free on
// loopback now, outside the kernel's ephemeral range, not handed out before
// by this process and not held by another process that picked ports the
// same way (internal/ports); 0 if none was found (NewNetwork's default then).
func FreeBasePort(n int) int { return ports.Base(n) }
