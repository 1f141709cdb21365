package quic

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

func countingExecutor(k *wire.RunnerKey, n *atomic.Int64, multi bool, revealOpens uint64) ExecutorFunc {
	inner := resultExecutor(k, multi, revealOpens)
	return func(ctx context.Context, j *Job) (Result, error) {
		n.Add(1)
		j.Progress(50, "half way")
		return inner(ctx, j)
	}
}

// connectAll starts n servers and one client connected to all of them.
func connectAll(t *testing.T, n int, ex func(*wire.RunnerKey) Executor, mutate func(*ClientConfig)) (*fixture, *wire.RunnerKey, *Client) {
	t.Helper()
	rk := runnerKey(t, 1)
	f := newFixture(t, n, rk)
	for i := range n {
		f.startServer(i, nil)
	}
	c := f.startClient(rk, ex(rk), mutate)
	eventually(t, "connected to all", func() bool { return len(c.Connected()) == n })
	f.tick(startHeight+1, c)
	for _, s := range f.servers {
		eventually(t, "present everywhere", func() bool { return s.IsPresent(rk.Address()) })
	}
	return f, rk, c
}

func assignment(id cip11.Hash, spec []byte, r cip11.Address) Assignment {
	return Assignment{JobID: id, JobSpec: spec, AssignmentHeight: startHeight + 1, DeadlineBlock: startHeight + 100, Runner: r}
}

// §10.1, §10.2, §10.6: k = 3 validators push the same job; the runner
// executes it once, acks Accepted on one stream and Duplicate on the other
// two, and only the accepted stream carries the result.
func TestPushK3OneExecution(t *testing.T) {
	var runs atomic.Int64
	f, rk, _ := connectAll(t, 3, func(k *wire.RunnerKey) Executor { return countingExecutor(k, &runs, false, 0) }, nil)
	id, spec := testJob("k3")
	errs := make(chan error, 3)
	for _, s := range f.servers {
		go func() { errs <- s.Push([]Assignment{assignment(id, spec, rk.Address())})[0] }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	count := map[local.Outcome]int{}
	for range 3 {
		o := f.waitOutcome(id)
		count[o.Outcome]++
		if o.Ack == nil {
			t.Fatalf("outcome %v without an ack (%v)", o.Outcome, o.Err)
		}
	}
	if count[local.Success] != 1 || count[local.Duplicate] != 2 {
		t.Fatalf("outcomes %v, want 1 Success and 2 Duplicate", count)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d executions", runs.Load())
	}
	forwarded := 0
	for _, m := range f.mempools {
		forwarded += len(m.Txs())
	}
	if forwarded != 1 {
		t.Fatalf("%d result transactions forwarded, want 1", forwarded)
	}
	for _, s := range f.servers {
		if !s.IsPresent(rk.Address()) {
			t.Fatal("Duplicate/Success changed local presence")
		}
	}
}

// §10.1: a second validator's push of an accepted job with a different
// non-validator field (deadline_block) is Reject(UnverifiableAssignment),
// not a Duplicate; a SoftFailure that leaves presence alone (§10.6).
func TestPushWithDifferentFieldsRejected(t *testing.T) {
	var runs atomic.Int64
	block := make(chan struct{})
	ex := func(k *wire.RunnerKey) Executor {
		inner := resultExecutor(k, false, 0)
		return ExecutorFunc(func(ctx context.Context, j *Job) (Result, error) {
			runs.Add(1)
			<-block
			return inner(ctx, j)
		})
	}
	f, rk, _ := connectAll(t, 3, ex, nil)
	defer close(block)
	id, spec := testJob("conflict")
	a := assignment(id, spec, rk.Address())
	if err := f.servers[0].Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	eventually(t, "accepted", func() bool { return runs.Load() == 1 })
	b := a
	b.DeadlineBlock++
	if err := f.servers[1].Push([]Assignment{b})[0]; err != nil {
		t.Fatal(err)
	}
	o := f.waitOutcome(id)
	if o.Outcome != local.SoftFailure || o.Ack == nil || *o.Ack != wire.Reject(wire.RejectUnverifiableAssignment) {
		t.Fatalf("outcome %v ack %v", o.Outcome, o.Ack)
	}
	c := a
	if err := f.servers[2].Push([]Assignment{c})[0]; err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(id); o.Outcome != local.Duplicate {
		t.Fatalf("identical push: %v", o.Outcome)
	}
	if !f.servers[1].IsPresent(rk.Address()) {
		t.Fatal("Reject cleared presence")
	}
}

// §10.1: an assignment_height the runner has not finalized is
// Reject(UnverifiableAssignment) and nothing runs.
func TestPushAboveFinalizedRejected(t *testing.T) {
	var runs atomic.Int64
	f, rk, _ := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return countingExecutor(k, &runs, false, 0) }, nil)
	id, spec := testJob("early")
	a := assignment(id, spec, rk.Address())
	a.AssignmentHeight = startHeight + 5
	if err := f.servers[0].Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	o := f.waitOutcome(id)
	if o.Outcome != local.SoftFailure || o.Ack == nil || *o.Ack != wire.Reject(wire.RejectUnverifiableAssignment) || runs.Load() != 0 {
		t.Fatalf("outcome %v ack %v runs %d", o.Outcome, o.Ack, runs.Load())
	}
}

// §10.1, §7.4 (a): a validator pushes only to runners in its local
// presence.
func TestPushOnlyToPresentRunners(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	id, spec := testJob("absent")
	if err := s.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != ErrNotPresent {
		t.Fatalf("push to an absent runner: %v", err)
	}
}

// §10.6, §11.1: no framed answer within ACK_TIMEOUT_BLOCKS is a
// HardFailure exactly at sentAt + ACK_TIMEOUT_BLOCKS + 1; presence is
// cleared and the stream closed; the next valid ping restores presence.
func TestAckTimeoutClearsPresence(t *testing.T) {
	rk := runnerKey(t, 1)
	f := newFixture(t, 1, rk)
	s := f.startServer(0, nil)
	r := rawDial(t, rawTransport(t), s, rk)
	r.handshake(f.snap.Pair())
	sent := uint64(startHeight + 1)
	s.Tick(sent)
	id, spec := testJob("silent")
	if err := s.Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	fs, _ := r.acceptJob() // read, never answered
	s.Tick(sent + f.p.AckTimeoutBlocks)
	if r.ping(1, sent+f.p.AckTimeoutBlocks) == nil {
		t.Fatal("ping not answered")
	}
	f.noOutcome(50e6)
	if !s.IsPresent(rk.Address()) {
		t.Fatal("cleared before ACK_TIMEOUT_BLOCKS")
	}
	s.Tick(sent + f.p.AckTimeoutBlocks + 1)
	o := f.waitOutcome(id)
	if o.Outcome != local.HardFailure || o.Height != sent+f.p.AckTimeoutBlocks+1 {
		t.Fatalf("outcome %v at %d", o.Outcome, o.Height)
	}
	if s.IsPresent(rk.Address()) {
		t.Fatal("HardFailure left the runner present")
	}
	if _, err := fs.readBy(nowPlus(5e9)); err == nil {
		t.Fatal("job stream still open after HardFailure")
	}
	if r.ping(2, sent+f.p.AckTimeoutBlocks+1) == nil {
		t.Fatal("ping after HardFailure not answered")
	}
	if !s.IsPresent(rk.Address()) {
		t.Fatal("valid ping did not restore presence (§10.6 floor)")
	}
	if s.pendingFor(id) != 0 {
		t.Fatal("timed-out push still pending")
	}
}

// §6.5: a CapabilityDelta removing a capability vetoes pushes needing it.
func TestCapabilityDeltaVetoesPush(t *testing.T) {
	f, rk, c := connectAll(t, 1, func(k *wire.RunnerKey) Executor { return resultExecutor(k, false, 0) }, nil)
	if err := c.SendCapabilityDelta(wire.CapabilityDelta{RemovedCapabilities: []string{"gpu"}}); err != nil {
		t.Fatal(err)
	}
	s := f.servers[0]
	id, spec := testJob("gpu")
	a := assignment(id, spec, rk.Address())
	a.Capabilities = []string{"gpu"}
	eventually(t, "veto", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.pres.Pushes(rk.Address(), s.height, a.Capabilities, nil)
	})
	if err := s.Push([]Assignment{a})[0]; err != ErrNotPresent {
		t.Fatalf("vetoed push: %v", err)
	}
	a.Capabilities = []string{"cpu"}
	if err := s.Push([]Assignment{a})[0]; err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(id); o.Outcome != local.Success {
		t.Fatalf("outcome %v", o.Outcome)
	}
}
