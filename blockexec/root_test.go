package blockexec

import (
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
)

// TestParallelRoot: the two-core, tree-reusing root equals merkle.Root at
// every size around the split and run boundaries, each hashed after the
// previous size (so reuse across different lists is exercised).
func TestParallelRoot(t *testing.T) {
	all := make([]merkle.Leaf, 5000)
	for i := range all {
		all[i].Address[0], all[i].Address[1] = byte(i), byte(i>>8)
		all[i].BaseWeight = cip11.U128From64(uint64(i))
	}
	var r rootHasher
	for _, n := range []int{0, 1, 2, 1023, 1024, 1025, 1087, 1088, 1089, 2047, 2048, 2049, 4999, 5000, 5000, 4990} {
		if got, want := r.root(all[:n]), merkle.Root(all[:n]); got != want {
			t.Fatalf("n=%d: parallel root differs", n)
		}
	}
	edited := append([]merkle.Leaf(nil), all...)
	edited[17].ReputationX1e9, edited[3001].ReputationX1e9 = 1, 2
	edited = append(edited[:2500], edited[2501:]...)
	if got, want := r.root(edited), merkle.Root(edited); got != want {
		t.Fatal("edited list: parallel root differs")
	}
}
