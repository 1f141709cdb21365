package quic

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// §10.1 (SPEC-NOTES N1): the validator pushes as soon as it has applied
// the block, usually before the runner's own chain view has it; a push whose
// assignment_height is above the runner's finalized height waits (≤ 2 s)
// for the runner's view to reach it, then passes the check and is Accepted.
func TestPushAheadOfRunnerViewWaits(t *testing.T) {
	var runs atomic.Int64
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return countingExecutor(k, &runs, false, 0) }, nil)
	id, spec := testJob("ahead")
	a := assignment(id, spec, rk.Address())
	a.AssignmentHeight = startHeight + 2 // the runner has seen startHeight + 1
	go func() {
		time.Sleep(200 * time.Millisecond)
		c.Tick(startHeight + 2)
	}()
	if err := f.servers[0].Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	o := f.waitOutcome(id)
	if o.Outcome != local.Success || o.Ack == nil || o.Ack.Kind != wire.AckAccepted {
		t.Fatalf("outcome %v, ack %+v, err %v", o.Outcome, o.Ack, o.Err)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d executions", runs.Load())
	}
}
