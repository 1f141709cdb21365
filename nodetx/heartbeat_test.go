package nodetx_test

import (
	"errors"
	"testing"

	"github.com/cip11/cip11/nodetx"
	"pgregory.net/rapid"
)

// TestHeartbeatCountsOnce (§7.1, SPEC-NOTES C7): whatever the inputs,
// HeartbeatCounts never panics, and a heartbeat that counts in block h
// (which then sets last_heartbeat to h) never counts in any later block.
func TestHeartbeatCountsOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nonce, last, h := rapid.Uint64().Draw(t, "nonce"), rapid.Uint64().Draw(t, "last"), rapid.Uint64().Draw(t, "h")
		if nodetx.HeartbeatCounts(nonce, last, h) != nil {
			return
		}
		later := rapid.Uint64Min(h).Draw(t, "later")
		if err := nodetx.HeartbeatCounts(nonce, h, later); err == nil {
			t.Fatalf("nonce %d counted at %d and again at %d", nonce, h, later)
		} else if !errors.Is(err, nodetx.ErrHeartbeatSpent) && !errors.Is(err, nodetx.ErrStaleTx) {
			t.Fatalf("replay at %d: %v", later, err)
		}
	})
}
