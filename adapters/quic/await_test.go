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

// pongHeight is the greatest verified pong height over the client's links.
func (c *Client) pongHeight() uint64 {
	var h uint64
	for _, l := range c.linkList() {
		l.mu.Lock()
		h = max(h, l.pongHeight)
		l.mu.Unlock()
	}
	return h
}

// pushAbovePong connects one runner, waits for its first verified pong at
// startHeight+1 and pushes a job whose assignment_height is above it by
// ahead; it returns the outcome, the client and the executions counter.
func pushAbovePong(t *testing.T, name string, ahead uint64) (Outcome, *Client, *atomic.Int64) {
	t.Helper()
	runs := new(atomic.Int64)
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return countingExecutor(k, runs, false, 0) }, nil)
	eventually(t, "pong at startHeight+1", func() bool { return c.pongHeight() >= startHeight+1 })
	id, spec := testJob(name)
	a := assignment(id, spec, rk.Address())
	a.AssignmentHeight = startHeight + 1 + ahead
	if err := f.servers[0].Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	return f.waitOutcome(id), c, runs
}

// SPEC-NOTES N1: a push one height above the pushing validator's last
// verified pong is that validator's signed word that the height is applied
// (§10.1: it pushes only after applying it; §6.3: its pongs already move
// the runner's view), so the runner acks at once, with no Tick from its
// chain view, and its view moves to that height. Without the attestation
// the push waits the whole 2 s for a view that never comes and is
// Reject(UnverifiableAssignment).
func TestPushOneAbovePongAttested(t *testing.T) {
	o, c, runs := pushAbovePong(t, "attested", 1)
	if o.Outcome != local.Success || o.Ack == nil || o.Ack.Kind != wire.AckAccepted {
		t.Fatalf("outcome %v, ack %+v, err %v", o.Outcome, o.Ack, o.Err)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d executions", runs.Load())
	}
	eventually(t, "view at the attested height", func() bool { return c.Height() == startHeight+2 })
}

// SPEC-NOTES N1: two heights above the validator's last pong, a push
// attests nothing: it waits for the runner's view, is refused when the view
// does not come, and leaves the view where it was.
func TestPushTwoAbovePongNotAttested(t *testing.T) {
	o, c, runs := pushAbovePong(t, "too-far", 2)
	if o.Outcome != local.SoftFailure || o.Ack == nil || *o.Ack != wire.Reject(wire.RejectUnverifiableAssignment) || runs.Load() != 0 {
		t.Fatalf("outcome %v ack %v runs %d", o.Outcome, o.Ack, runs.Load())
	}
	if h := c.Height(); h != startHeight+1 {
		t.Fatalf("view moved to %d", h)
	}
	// the runner's serve time holds the whole wait for the view (the
	// histogram's buckets are within 2 % of the value)
	if sl := c.ServeLatency(); sl.Count() != 1 || sl.Quantile(500) < uint64(assignmentWait.Microseconds())*98/100 {
		t.Fatalf("serve latency: %d samples, median %d µs; want 1 of about %v", sl.Count(), sl.Quantile(500), assignmentWait)
	}
}

// SPEC-NOTES N1: the runner's own view counts as well as the pong: with
// the validator's last pong at startHeight+1 and the view already at
// startHeight+2 (from another validator), a push at startHeight+3 is one
// above the view and is Accepted at once; measured against the pong
// alone it would wait the whole 2 s for a view that never comes and be
// refused.
func TestPushOneAboveViewAttested(t *testing.T) {
	runs := new(atomic.Int64)
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return countingExecutor(k, runs, false, 0) }, nil)
	eventually(t, "pong at startHeight+1", func() bool { return c.pongHeight() >= startHeight+1 })
	c.Tick(startHeight + 2)
	if ph := c.pongHeight(); ph != startHeight+1 {
		t.Fatalf("pong height %d, want %d", ph, startHeight+1)
	}
	id, spec := testJob("above-view")
	a := assignment(id, spec, rk.Address())
	a.AssignmentHeight = startHeight + 3
	if err := f.servers[0].Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	o := f.waitOutcome(id)
	if o.Outcome != local.Success || o.Ack == nil || o.Ack.Kind != wire.AckAccepted || runs.Load() != 1 {
		t.Fatalf("outcome %v ack %+v err %v runs %d", o.Outcome, o.Ack, o.Err, runs.Load())
	}
	if st := c.Stats(); st.PushesAttested != 1 || st.PushesWaited != 0 {
		t.Fatalf("stats %+v: want the push attested, none waited", st)
	}
	// an attested push is served without the wait
	if sl := c.ServeLatency(); sl.Count() != 1 || sl.Quantile(500) >= uint64(assignmentWait.Microseconds()) {
		t.Fatalf("serve latency: %d samples, median %d µs; want 1 under %v", sl.Count(), sl.Quantile(500), assignmentWait)
	}
	eventually(t, "view at the attested height", func() bool { return c.Height() == startHeight+3 })
}
