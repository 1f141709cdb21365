package replay

import (
	"sync"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
)

// parallelMin is the snapshot size below which one core hashes the tree.
const parallelMin = 1024

// parallelRoot is merkle.Root on two cores: the leaves split at a multiple
// of 2^k, each half reduced to level k on its own goroutine, the joined
// level folded (merkle.Level documents why this is the same root).
func parallelRoot(leaves []merkle.Leaf) cip11.Hash {
	n := len(leaves)
	if n < parallelMin {
		return merkle.Root(leaves)
	}
	const k = 6 // runs of 64 leaves; n ≥ 1024 > 2^k
	half := (n / 2) &^ (1<<k - 1)
	var left []cip11.Hash
	var wg sync.WaitGroup
	wg.Go(func() { left = merkle.Level(leaves[:half], 0, k) })
	right := merkle.Level(leaves[half:], uint32(half), k)
	wg.Wait()
	return merkle.Fold(append(left, right...))
}
