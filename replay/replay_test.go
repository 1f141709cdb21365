package replay

import (
	"testing"

	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/synth"
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
	with, err := Run(synth.Sample(), Config{Options: blockexec.Options{SnapshotCache: 4096}, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	without, err := Run(synth.Sample(), Config{Limit: limit})
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
