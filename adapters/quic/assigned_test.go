package quic

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/wire"
)

// assignedView is a scriptable ClientConfig.Assigned: it answers from
// answer and records what it was asked.
type assignedView struct {
	mu     sync.Mutex
	answer map[cip11.Hash]bool
	fail   map[cip11.Hash]error
	asked  []assignedQuery
}

type assignedQuery struct {
	job    cip11.Hash
	runner cip11.Address
	height uint64
}

func (v *assignedView) Assigned(_ context.Context, job cip11.Hash, runner cip11.Address, height uint64) (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asked = append(v.asked, assignedQuery{job, runner, height})
	return v.answer[job], v.fail[job]
}

func (v *assignedView) queries() []assignedQuery {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]assignedQuery(nil), v.asked...)
}

// §10.1 (issue 18 item 6): a runner that its chain view says is no longer
// assigned at assignment_height — or whose view cannot tell — acks
// Reject(UnverifiableAssignment) and does not execute; one still assigned
// accepts. The view is asked once per job_id (a second validator's push of
// an accepted job is a Duplicate without asking again), with the runner's
// own address and the push's assignment_height.
func TestPushStillAssignedCheck(t *testing.T) {
	var runs atomic.Int64
	view := &assignedView{answer: map[cip11.Hash]bool{}, fail: map[cip11.Hash]error{}}
	f, rk, _ := connectAll(t, 2, func(k *wire.RunnerKey) Executor { return countingExecutor(k, &runs, false, 0) },
		func(c *ClientConfig) { c.Assigned = view.Assigned })

	gone, _ := testJob("reselected away")
	broken, _ := testJob("view down")
	kept, spec := testJob("still assigned")
	view.answer[kept] = true
	view.fail[broken] = errors.New("validator API unreachable")

	for _, id := range []cip11.Hash{gone, broken} {
		if err := f.servers[0].Push([]Assignment{assignment(id, spec, rk.Address())})[0]; err != nil {
			t.Fatal(err)
		}
		o := f.waitOutcome(id)
		if o.Outcome != local.SoftFailure || o.Ack == nil || *o.Ack != wire.Reject(wire.RejectUnverifiableAssignment) {
			t.Fatalf("job %x: outcome %v ack %v, want Reject(UnverifiableAssignment)", id[:4], o.Outcome, o.Ack)
		}
		// issue 30: the outcome keeps the reason (a job event's detail)
		if !errors.Is(o.Err, ErrAckRejected) || !strings.Contains(o.Err.Error(), "Reject(UnverifiableAssignment)") {
			t.Fatalf("job %x: outcome err %v, want ErrAckRejected naming the reason", id[:4], o.Err)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("%d executions of jobs the runner is not assigned", runs.Load())
	}

	if err := f.servers[0].Push([]Assignment{assignment(kept, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(kept); o.Outcome != local.Success {
		t.Fatalf("still assigned: outcome %v ack %v err %v", o.Outcome, o.Ack, o.Err)
	}
	if err := f.servers[1].Push([]Assignment{assignment(kept, spec, rk.Address())})[0]; err != nil {
		t.Fatal(err)
	}
	if o := f.waitOutcome(kept); o.Outcome != local.Duplicate {
		t.Fatalf("second push: outcome %v ack %v", o.Outcome, o.Ack)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d executions, want 1", runs.Load())
	}
	want := []assignedQuery{{gone, rk.Address(), startHeight + 1}, {broken, rk.Address(), startHeight + 1}, {kept, rk.Address(), startHeight + 1}}
	got := view.queries()
	if len(got) != len(want) {
		t.Fatalf("asked %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("query %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
