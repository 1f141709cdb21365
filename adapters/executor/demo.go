package executor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/cip11/cip11"
)

// DefaultWorkTime is the demo executor's work time for a job whose spec
// has none (WorkMillis 0) when DemoConfig.WorkTime is zero.
const DefaultWorkTime = 50 * time.Millisecond

// DemoResultDomain prefixes the demo executor's output preimage.
const DemoResultDomain = "cip11-devnet-result"

// DemoOutput is the demo executor's output for a job: the 32 bytes
// keccak256("cip11-devnet-result" ‖ job_id ‖ payload).
func DemoOutput(jobID cip11.Hash, payload []byte) []byte {
	h := cip11.Keccak256([]byte(DemoResultDomain), jobID[:], payload)
	return h[:]
}

// DemoConfig configures the demo executor.
type DemoConfig struct {
	// WorkTime is the work time of a job whose spec has none (default
	// DefaultWorkTime).
	WorkTime time.Duration
	// FailPerMille makes that many executions per thousand fail with
	// ErrDemoFailure (0 … 1000).
	FailPerMille uint32
	// Rand draws the failures; nil: a PCG seeded with Seed (the runner's
	// seeding, so a seeded devnet fails the same executions).
	Rand *rand.Rand
	Seed uint64
}

// Demo is the built-in demo executor: it waits the job's work time, fails
// at the configured rate, and outputs DemoOutput.
type Demo struct {
	work time.Duration
	fail uint32
	mu   sync.Mutex // guards rng
	rng  *rand.Rand
}

// NewDemo validates cfg and returns the demo executor.
func NewDemo(cfg DemoConfig) (*Demo, error) {
	switch {
	case cfg.WorkTime < 0:
		return nil, fmt.Errorf("%w: demo work time %v is negative", ErrBadConfig, cfg.WorkTime)
	case cfg.FailPerMille > 1000:
		return nil, fmt.Errorf("%w: demo fail per mille %d (0 … 1000)", ErrBadConfig, cfg.FailPerMille)
	}
	d := &Demo{work: cfg.WorkTime, fail: cfg.FailPerMille, rng: cfg.Rand}
	if d.work == 0 {
		d.work = DefaultWorkTime
	}
	if d.rng == nil {
		d.rng = rand.New(rand.NewPCG(cfg.Seed, 0xfa11))
	}
	return d, nil
}

// Execute waits in.WorkMillis (or the configured work time), then fails
// with ErrDemoFailure at the configured rate or returns DemoOutput. A
// context that ends first is its error, wrapped.
func (d *Demo) Execute(ctx context.Context, in Input) ([]byte, error) {
	if d == nil || d.rng == nil || ctx == nil {
		return nil, ErrNilExecutor
	}
	work := d.work
	if in.WorkMillis > 0 {
		work = time.Duration(in.WorkMillis) * time.Millisecond
	}
	t := time.NewTimer(work)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("executor: demo job %s: %w", in.JobID, ctx.Err())
	case <-t.C:
	}
	d.mu.Lock()
	fail := d.fail > 0 && uint32(d.rng.IntN(1000)) < d.fail
	d.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("%w: job %s", ErrDemoFailure, in.JobID)
	}
	return DemoOutput(in.JobID, in.Payload), nil
}
