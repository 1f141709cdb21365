package replay

import (
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
)

// TestSampleReplays: the embedded sample replays with every output and
// digest agreeing, with and without the §9.2 candidate cache, and both
// runs end in the same digest.
func TestSampleReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("full sample replay")
	}
	limit := 0
	if raceEnabled() {
		limit = 150 // the race tier replays a prefix
	}
	with, err := Run(Sample(), Config{Options: Options{SnapshotCache: 4096}, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	without, err := Run(Sample(), Config{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if with != without || (limit == 0 && with.Blocks != 1000) {
		t.Fatalf("with cache %+v\nwithout %+v", with, without)
	}
	if limit == 0 && (with.Reselections == 0 || with.Expired == 0 || with.MRUWrites == 0 || with.PendingConsumed == 0) {
		t.Fatalf("the sample must exercise re-selection, expiry, MRU and the pending pass: %+v", with)
	}
}

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
