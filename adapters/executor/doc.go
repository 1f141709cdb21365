// Package executor runs a runner's jobs: the [Executor] interface (the
// job in, the output bytes or an error out), the built-in [Demo] and the
// [Process] executor that runs an operator's shell command for each job
// (issue 30; docs/executor.md).
//
// # Where it sits
//
// A runner executes only an assignment it accepted: §10.1 requires it,
// before it acks and before any expensive execution, to verify the
// job_spec_hash, the assignment_hash, the validator's signature under a
// peer_pubkey of the active snapshot and its own runner_pubkey, and that
// assignment_height is finalized and applied in its own view and the job
// still assigned to it. Only then does the runner call Execute, with
// [Input] filled from the job spec and the assignment. The output becomes
// the §10.3 commit and reveal; an error is a failed execution.
//
// Execute's context is cancelled when the runner receives a §10.5
// JobCancel for the assignment ("the runner MUST stop further execution")
// and when the job's time is up; an executor returns promptly once it is.
// Cancellation does not void §10.3 obligations for a commitment already
// sent, which stay with the runner, not the executor.
//
// # The process executor
//
// [Process] runs `sh -c COMMAND` per job: the payload on stdin, the job's
// id, kind, M, deadline_block and assignment_height in CIP11_*
// environment variables, stdout (at most MaxOutput bytes) the output. It
// treats the command as hostile: each command runs in its own process
// group; stdout past the bound kills the group at once
// ([ErrOutputTooLarge]); the per-job Timeout, the context's deadline
// ([ErrTimeout]) and cancellation ([ErrCanceled]) send the group SIGTERM
// and, Grace later, SIGKILL; whatever the command leaves in its group is
// killed when the job ends; a child holding the pipes cannot hang it
// ([ErrPipesHeld]); stderr is logged line by line within per-job bounds;
// at most MaxConcurrent commands run at once ([ErrBusy] for a job whose
// context ends while it waits). Every goroutine of a job is joined and
// the command waited for before Execute returns. It is not a sandbox: a
// command that leaves its process group (setsid) or exhausts the machine
// through other means needs the operator's own limits (ulimit, cgroups,
// a container).
package executor
