package merkle_test

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
)

// The block-S snapshot of two candidates, in ascending address order (D14),
// each with its block-S stake, reputation and CIP-2 v3 base weight (§9.3).
func ExampleRoot() {
	leaves := []merkle.Leaf{
		{Address: cip11.Address{0x01}, EffectiveStake: cip11.U128From64(1_000), ReputationX1e9: 1_000_000_000, BaseWeight: cip11.U128From64(1_000)},
		{Address: cip11.Address{0x02}, EffectiveStake: cip11.U128From64(2_000), ReputationX1e9: 10_000_000, BaseWeight: cip11.U128From64(200)},
	}
	fmt.Println(merkle.Root(leaves))
	fmt.Println(merkle.Root(nil)) // keccak256("cowboy-candidates-empty-v1")
	// Output:
	// 91825209651f1098096f230f82fb24afe1623f2ce9748e00d44e7a1e381792e9
	// d15e504c62e0d8e151bf3d894baa33bcf6779d3f2da34df110a5da3bdbba3795
}
