package executor

import (
	"context"
	"errors"

	"github.com/cip11/cip11"
)

// Input is the job an executor runs: the fields of the devnet job spec
// (nodetx.JobSpec) and of its §10.1 JobAssignment that a program may use.
type Input struct {
	JobID            cip11.Hash
	Kind             uint8  // job_kind (§9.4)
	Runners          uint32 // M = verification.runners
	Payload          []byte
	DeadlineBlock    uint64 // the assignment's deadline_block (§10.1)
	AssignmentHeight uint64 // the assignment's assignment_height (§10.1)
	WorkMillis       uint32 // the demo executor's work time (0: its default)
}

// Executor runs one job: the job in, the output bytes or an error out.
// The runner calls it only for an assignment it accepted (§10.1: verified,
// finalized+applied in its view, still assigned); ctx is cancelled on a
// §10.5 JobCancel for that assignment and when the job's time is up, and
// Execute returns promptly once it is. Execute is called concurrently.
type Executor interface {
	Execute(ctx context.Context, in Input) ([]byte, error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, in Input) ([]byte, error)

// Execute calls f; a nil f is ErrNilExecutor.
func (f ExecutorFunc) Execute(ctx context.Context, in Input) ([]byte, error) {
	if f == nil {
		return nil, ErrNilExecutor
	}
	return f(ctx, in)
}

var (
	// ErrBadConfig is a constructor's refusal: a missing dependency or a
	// field out of range.
	ErrBadConfig = errors.New("executor: bad config")
	// ErrNilExecutor is Execute on a nil or zero-value executor, or with
	// a nil context.
	ErrNilExecutor = errors.New("executor: nil executor or context")
	// ErrDemoFailure is the demo executor's injected failure.
	ErrDemoFailure = errors.New("executor: demo execution failed")
	// ErrOutputTooLarge is a command whose stdout exceeded MaxOutput; its
	// process group was killed as soon as it did.
	ErrOutputTooLarge = errors.New("executor: output too large")
	// ErrExitStatus is a command that exited non-zero or died of a signal
	// it was not sent by the executor. The error also wraps the
	// *exec.ExitError (errors.As gives the exit code).
	ErrExitStatus = errors.New("executor: command failed")
	// ErrTimeout is a command still running at the per-job Timeout or at
	// the context's deadline; its process group was killed. When the
	// context's deadline was the cause the error also wraps
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("executor: command timed out")
	// ErrCanceled is a command whose context was cancelled (§10.5
	// JobCancel) while it ran; its process group was killed. The error
	// also wraps context.Canceled.
	ErrCanceled = errors.New("executor: job cancelled")
	// ErrBusy is a job whose context ended while it waited for one of the
	// MaxConcurrent slots; it never started. The error also wraps the
	// context's error.
	ErrBusy = errors.New("executor: every slot busy")
	// ErrStart is a command that could not be started (fork/exec failed).
	ErrStart = errors.New("executor: command did not start")
	// ErrPipesHeld is a command that exited while a process it left behind
	// kept its stdout or stderr open past the grace period: its output may
	// be incomplete, so the job fails.
	ErrPipesHeld = errors.New("executor: command exited with its output still held open")
	// ErrIO is a failure copying the command's stdin, stdout or stderr.
	ErrIO = errors.New("executor: command I/O failed")
	// ErrUnsupported is the process executor on a platform without process
	// groups.
	ErrUnsupported = errors.New("executor: process executor unsupported on this platform")
)
