package selection_test

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/selection"
)

// ExampleWeightedDraw draws once from three paired weights (§9.2).
func ExampleWeightedDraw() {
	weights := []cip11.U128{cip11.U128From64(1000), cip11.U128From64(200), cip11.U128From64(1500)}
	var seed cip11.Hash // all zero: ticket mod 2700 = 1602
	j, ok := selection.WeightedDraw(weights, seed, 0)
	fmt.Println(j, ok)
	// Output: 2 true
}

// ExampleBaseWeight computes the CIP-2 v3 weight of a runner with stake
// 1,000 and reputation 0.25: factor √0.25 = 0.5 (§9.3).
func ExampleBaseWeight() {
	w, err := selection.BaseWeight(cip11.U128From64(1000), 250_000_000, 1, 100_000)
	fmt.Println(w, err)
	// Output: 500 <nil>
}

// ExamplePools_Draw draws a two-runner committee present-first: the one
// present runner comes first, then the fallback pool (§7.3, §9.2).
func ExamplePools_Draw() {
	a := func(b byte) cip11.Address { return cip11.Address{b} }
	pools := selection.NewPools(selection.BranchPresentFirst, []selection.Eligible{
		{Address: a(1), BaseWeight: cip11.U128From64(10)},
		{Address: a(2), BaseWeight: cip11.U128From64(10), Present: true},
		{Address: a(3), BaseWeight: cip11.U128From64(10)},
	})
	committee := pools.Draw(cip11.Keccak256([]byte("seed")), 2, nil)
	fmt.Println(committee[0] == a(2), len(committee))
	// Output: true 2
}
