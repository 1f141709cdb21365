package replay_test

import (
	"errors"
	"io"
	"testing"

	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/replay"
)

// TestExecutorDiscardLeavesNoTrace: executing a block and discarding it
// must leave the executor exactly as before, so that the same block then
// executes to the logged outputs. The live validator's core checks
// proposals and discards them; a discarded block's registrations once
// stayed in the ACTIVE_RUNNERS mirror and every later state digest
// diverged.
func TestExecutorDiscardLeavesNoTrace(t *testing.T) {
	r, err := chainlog.NewReader(replay.Sample())
	if err != nil {
		t.Fatal(err)
	}
	x, err := replay.NewExecutor(r.Header(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for n := 0; n < 120; n++ {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.Execute(&b); err != nil {
			t.Fatalf("block %d: %v", b.Height, err)
		}
		x.Discard()
		out, err := x.Execute(&b)
		if err != nil {
			t.Fatalf("block %d after a discard: %v", b.Height, err)
		}
		if d := replay.DiffOutput(uint64(b.Height), &b.Out, &out); d != nil {
			t.Fatalf("after a discard: %v", d)
		}
		if err := x.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}
