package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/executor"
	"github.com/cip11/cip11/job"
)

// RunnerConfig.Executor (issue 30): the runner runs its executor with the
// job's input and reveals keccak256(output) with the output, which the
// job's view then has; an executor error is a failed execution: the runner
// sends nothing and the job stays without a result.
func TestRunnerExecutor(t *testing.T) {
	d := testDevnet(t, 1, nil)
	v := newTestValidator(t, d, t.TempDir())
	defer v.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var fail atomic.Bool
	var sawDeadline atomic.Bool
	exe := executor.ExecutorFunc(func(ctx context.Context, in executor.Input) ([]byte, error) {
		if _, ok := ctx.Deadline(); ok {
			sawDeadline.Store(true)
		}
		if fail.Load() {
			return nil, errors.New("the operator's program failed")
		}
		return append([]byte("out:"), in.Payload...), nil
	})
	r, err := NewRunner(ctx, RunnerConfig{Genesis: d.Genesis, Key: d.RunnerKeys[0], Chain: LocalChain{V: v},
		Validator: v.Addr().String(), Tick: 5 * time.Millisecond, Executor: exe, BlockTime: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	waitPresent(t, v, 1)
	waitLinked(t, v, []*Runner{r})
	run := func(nonce uint64) job.View {
		id, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{1}, Kind: 1, Runners: 1, TimeoutBlocks: 40, Nonce: nonce, Payload: []byte("p")})
		if err != nil {
			t.Fatal(err)
		}
		var jv job.View
		for range 30 {
			if err := v.ProduceBlock(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if jv, _ = v.Job(id); jv.State == job.StateCompleted {
				break
			}
		}
		return jv
	}
	jv := run(1)
	if jv.State != job.StateCompleted || jv.Output == nil || string(*jv.Output) != "out:p" || len(jv.Members) != 1 || !jv.Members[0].Matched {
		t.Fatalf("with the executor's output: %+v", jv)
	}
	if !sawDeadline.Load() {
		t.Error("the executor's context had no deadline")
	}
	fail.Store(true)
	before := r.Executed()
	jv = run(2)
	if jv.State == job.StateCompleted || jv.Output != nil || (len(jv.Members) == 1 && jv.Members[0].Revealed) || r.Executed() != before {
		t.Fatalf("a failing executor: %+v (executed %d → %d)", jv, before, r.Executed())
	}
}
