package nodetx

import (
	"errors"
	"fmt"
)

// ErrHeartbeatSpent: a heartbeat transaction whose nonce (its signing
// height) is not after the runner's on-chain last_heartbeat. Every block
// that counts a heartbeat sets last_heartbeat to its own height, which is
// at least the nonce, so a transaction counts at most once: a proposer
// cannot re-include a runner's old heartbeat to keep a dead runner above
// the §7.1 floor (SPEC-NOTES C7).
var ErrHeartbeatSpent = errors.New("node: heartbeat already counted")

// ErrHeartbeatEarly: a heartbeat transaction whose nonce is after the
// height of the block that would count it.
var ErrHeartbeatEarly = errors.New("node: heartbeat signed for a later height")

// HeartbeatCounts reports whether block h may count a heartbeat
// transaction signed at height nonce (§7.1: "anti-replayed by the ordinary
// account transaction nonce and signature"), for a runner whose on-chain
// last_heartbeat as of block h−1 is last (0 for a runner registered by
// block h itself). In this order:
//
//  1. nonce ≤ h ([ErrHeartbeatEarly]): the runner signs at the height it
//     has seen, so the including block is at or after it;
//  2. nonce + [HeartbeatWindow] ≥ h, computed without wrapping
//     ([ErrStaleTx]): a heartbeat that waited longer is refused;
//  3. nonce > last ([ErrHeartbeatSpent]): the nonce is the runner's
//     per-account counter and last_heartbeat, chain state covered by the
//     state digest, is its high-water mark.
//
// It is pure and total: any inputs give an answer, never a panic.
func HeartbeatCounts(nonce, last, h uint64) error {
	switch {
	case nonce > h:
		return fmt.Errorf("%w: signed at %d, block %d", ErrHeartbeatEarly, nonce, h)
	case h-nonce > HeartbeatWindow:
		return fmt.Errorf("%w: heartbeat signed at %d, block %d (window %d)", ErrStaleTx, nonce, h, HeartbeatWindow)
	case nonce <= last:
		return fmt.Errorf("%w: signed at %d, last_heartbeat %d", ErrHeartbeatSpent, nonce, last)
	}
	return nil
}
