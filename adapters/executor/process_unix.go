//go:build unix

package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// killReason is why the supervisor killed the process group.
type killReason int

const (
	killNone killReason = iota
	killOverflow
	killTimeout
	killContext
)

// run starts the command in its own process group, supervises it and
// waits for it. The supervisor goroutine is joined before run returns.
func (p *Process) run(ctx context.Context, in Input) ([]byte, error) {
	cmd := exec.Command(p.shell, "-c", p.command)
	cmd.Dir = p.dir
	cmd.Env = p.environ(in)
	cmd.Stdin = bytes.NewReader(in.Payload)
	out := newBoundedBuffer(p.maxOutput)
	errlog := &stderrLog{log: p.log, job: in.JobID.String(), maxLines: p.logLines, maxBytes: p.logBytes}
	cmd.Stdout, cmd.Stderr = out, errlog
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A process the command leaves behind may hold stdout or stderr open
	// after the shell exits: Wait closes them Grace after the exit.
	cmd.WaitDelay = p.grace
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrStart, in.JobID, err)
	}
	pgid := cmd.Process.Pid // Setpgid with Pgid 0: the group is the shell's pid
	done := make(chan struct{})
	var reason killReason
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		reason = p.supervise(ctx, pgid, out.overflow, done)
	}()
	waitErr := cmd.Wait()
	close(done)
	wg.Wait()
	// Whatever the command left in its group dies with the job. (The
	// shell is reaped by now; its pid stays reserved while any member of
	// its group lives, and an empty group makes this a harmless ESRCH.)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	errlog.finish()
	took := time.Since(start).Round(time.Millisecond)

	switch {
	case out.over || reason == killOverflow:
		return nil, fmt.Errorf("%w: job %s: stdout exceeded %d bytes; process group killed", ErrOutputTooLarge, in.JobID, p.maxOutput)
	case reason == killTimeout:
		return nil, fmt.Errorf("%w: job %s: still running after %v; process group killed", ErrTimeout, in.JobID, p.timeout)
	case reason == killContext:
		return nil, ctxFailure(in, ctx.Err(), fmt.Sprintf("after %v; process group killed", took))
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(waitErr, &exitErr):
		return nil, fmt.Errorf("%w: job %s: %w; stderr tail %q", ErrExitStatus, in.JobID, exitErr, errlog.tailText())
	case errors.Is(waitErr, exec.ErrWaitDelay):
		return nil, fmt.Errorf("%w: job %s: a process it started kept stdout or stderr open %v after it exited; process group killed", ErrPipesHeld, in.JobID, p.grace)
	case waitErr != nil:
		return nil, fmt.Errorf("%w: job %s: %w", ErrIO, in.JobID, waitErr)
	}
	return bytes.Clone(out.buf), nil
}

// supervise waits for the command to end (done), for its stdout to
// overflow, for the Timeout or for ctx. On overflow it kills the group at
// once; on timeout or ctx it sends the group SIGTERM and, if the command
// has not ended Grace later, SIGKILL. It returns why it killed.
func (p *Process) supervise(ctx context.Context, pgid int, overflow, done <-chan struct{}) killReason {
	var timeout <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		timeout = t.C
	}
	var reason killReason
	select {
	case <-done:
		return killNone
	case <-overflow:
		p.signal(pgid, syscall.SIGKILL, "stdout over its bound")
		return killOverflow
	case <-timeout:
		reason = killTimeout
	case <-ctx.Done():
		reason = killContext
	}
	p.signal(pgid, syscall.SIGTERM, "job over")
	grace := time.NewTimer(p.grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		p.signal(pgid, syscall.SIGKILL, "still running after the grace period")
	}
	return reason
}

func (p *Process) signal(pgid int, sig syscall.Signal, why string) {
	err := syscall.Kill(-pgid, sig)
	p.log.Debug("signalled the command's process group", "pgid", pgid, "signal", sig.String(), "why", why, "err", err)
}
