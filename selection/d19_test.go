package selection

import (
	"encoding/binary"
	"testing"

	"github.com/cip11/cip11"
)

// TestD19Quantified measures DECISIONS D19 (recorded in SPEC-NOTES SEL9):
// with stakes in wei the u64 ticket of §9.2 step 5 cannot reach past 2^64
// of accumulated weight, so only a prefix of the pool is ever drawable.
func TestD19Quantified(t *testing.T) {
	const n, draws = 5000, 10000
	cases := []struct {
		name         string
		stakeWei     cip11.U128
		maxReachable int // largest pool index that can ever be drawn
		firstWinsPct int // share of draws won by pool index 0, percent (floor)
	}{
		// 1,000 tokens (1e21 wei) > 2^64: index 0 absorbs every ticket.
		{"1000_tokens", u128("1000000000000000000000"), 0, 100},
		// 1 token (1e18 wei): 2^64/1e18 ≈ 18.4, so indices 0..18 only.
		{"1_token", cip11.U128From64(1_000_000_000_000_000_000), 18, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			weights := make([]cip11.U128, n)
			for i := range weights {
				weights[i] = c.stakeWei
			}
			maxIdx, first := 0, 0
			var seed cip11.Hash
			for k := 0; k < draws; k++ {
				binary.BigEndian.PutUint64(seed[:8], uint64(k))
				j, ok := WeightedDraw(weights, seed, 0)
				if !ok {
					t.Fatal("no draw")
				}
				maxIdx = max(maxIdx, j)
				if j == 0 {
					first++
				}
			}
			t.Logf("%s: %d of %d runners reachable; index 0 won %d/%d draws", c.name, maxIdx+1, n, first, draws)
			if maxIdx != c.maxReachable || first*100/draws < c.firstWinsPct {
				t.Fatalf("max reachable index %d (want %d), first wins %d/%d", maxIdx, c.maxReachable, first, draws)
			}
		})
	}
}
