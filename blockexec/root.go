package blockexec

import (
	"sync"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
)

// parallelMin is the snapshot size below which one core hashes the tree.
const parallelMin = 1024

// runLevel is the level at which the two halves join: runs of 64 leaves.
const runLevel = 6

// rootHasher is merkle.Root on two cores, reusing the previous tree: the
// leaves split at a multiple of 2^runLevel, each half kept as a
// merkle.Run built on its own goroutine from the previous root's run at
// the same position, the joined top level folded (merkle.Level and
// merkle.Run document why this is the same root). Not safe for
// concurrent use; the engine calls it from one goroutine.
type rootHasher struct {
	left, right *merkle.Run
}

func (r *rootHasher) root(leaves []merkle.Leaf) cip11.Hash {
	n := len(leaves)
	if n < parallelMin {
		return merkle.Root(leaves)
	}
	half := (n / 2) &^ (1<<runLevel - 1)
	var wg sync.WaitGroup
	wg.Go(func() { r.left = merkle.NewRun(leaves[:half], 0, runLevel, r.left) })
	r.right = merkle.NewRun(leaves[half:], uint32(half), runLevel, r.right)
	wg.Wait()
	top := append(append([]cip11.Hash(nil), r.left.Top()...), r.right.Top()...)
	return merkle.Fold(top)
}
