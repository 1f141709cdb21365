//go:build unix

package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The hostile-command tests (issue 30): each command runs through a
// script executor with real sh processes, ends as a failure with a
// reason, leaves no process of its group behind, and the executor and the
// test process stay healthy: a normal job runs afterwards, no slot is
// held, no descriptor leaked, no goroutine left (TestMain).

// pgFile is where a hostile command writes its shell's pid, its group.
func pgFile(t *testing.T) (string, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "pg")
	return f, fmt.Sprintf("echo $$ > %s; ", f)
}

// TestHostileEndlessOutput: `yes`, in the foreground or left in the
// background, is killed when stdout passes MaxOutput — not at a timeout
// (there is none) — and the job fails with ErrOutputTooLarge.
func TestHostileEndlessOutput(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script})
	fds := baseline(t, p)
	for _, cmd := range []string{"yes", "yes & sleep 60"} {
		f, pg := pgFile(t)
		out, err, took := run(t, p, jobInput(1, pg+cmd))
		if !errors.Is(err, ErrOutputTooLarge) || out != nil {
			t.Fatalf("%s: %q, %v", cmd, out, err)
		}
		if took > 30*time.Second {
			t.Fatalf("%s: killed after %v", cmd, took)
		}
		groupGone(t, readPgid(t, f))
	}
	healthy(t, p, fds)
}

// TestHostileSleepPastTimeout: a command sleeping past the per-job
// Timeout, or past the context's deadline, is killed and fails with
// ErrTimeout (and context.DeadlineExceeded for the deadline).
func TestHostileSleepPastTimeout(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script, Timeout: 300 * time.Millisecond, Grace: 500 * time.Millisecond})
	fds := baseline(t, p)
	f, pg := pgFile(t)
	_, err, took := run(t, p, jobInput(1, pg+"sleep 60"))
	if !errors.Is(err, ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || took > 30*time.Second {
		t.Fatalf("Timeout: %v after %v", err, took)
	}
	groupGone(t, readPgid(t, f))
	healthy(t, p, fds)

	p, _ = newProc(t, ProcessConfig{Command: script, Grace: 500 * time.Millisecond})
	f, pg = pgFile(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Execute(ctx, jobInput(2, pg+"sleep 60"))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 30*time.Second {
		t.Fatalf("deadline: %v after %v", err, time.Since(start))
	}
	groupGone(t, readPgid(t, f))
	healthy(t, p, fds)
}

// TestHostileIgnoresSIGTERM: a command that ignores SIGTERM (so does the
// sleep it runs: an ignored signal stays ignored across exec) survives
// the SIGTERM and is killed by the SIGKILL one Grace later: the job takes
// at least Timeout+Grace, far less than the sleep, and fails ErrTimeout.
func TestHostileIgnoresSIGTERM(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script, Timeout: 200 * time.Millisecond, Grace: time.Second})
	fds := baseline(t, p)
	f, pg := pgFile(t)
	_, err, took := run(t, p, jobInput(1, "trap '' TERM; "+pg+"sleep 60"))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("%v", err)
	}
	if took < 1200*time.Millisecond || took > 30*time.Second {
		t.Fatalf("ended after %v (Timeout 200ms + Grace 1s; the sleep is 60s)", took)
	}
	groupGone(t, readPgid(t, f))
	healthy(t, p, fds)
}

// TestHostileSIGTERMFirst: the group gets SIGTERM first: a command that
// traps it says so on stderr and exits well before the 20 s grace would
// have ended in SIGKILL.
func TestHostileSIGTERMFirst(t *testing.T) {
	p, rec := newProc(t, ProcessConfig{Command: script, Timeout: 200 * time.Millisecond, Grace: 20 * time.Second})
	fds := baseline(t, p)
	f, pg := pgFile(t)
	_, err, took := run(t, p, jobInput(1, "trap 'echo got-term >&2; exit 9' TERM; "+pg+"sleep 60 & wait"))
	if !errors.Is(err, ErrTimeout) || took > 15*time.Second {
		t.Fatalf("%v after %v", err, took)
	}
	var lines []string
	for _, r := range rec.with("command stderr") {
		lines = append(lines, attr(r, "line").String())
	}
	if len(lines) != 1 || lines[0] != "got-term" {
		t.Fatalf("stderr %q, want the trap's got-term", lines)
	}
	groupGone(t, readPgid(t, f))
	healthy(t, p, fds)
}

// bomb is a fork bomb bounded by construction (depth 3: 15 shells, each
// with a 60 s sleep): it writes its group to $dir/pg.<job id>.
const bomb = `echo $$ > %s/pg.$CIP11_JOB_ID
b() { if [ "$1" -gt 0 ]; then b $(($1-1)) & b $(($1-1)) & fi; sleep 60; }
b 3`

// TestHostileForkBomb: with MaxConcurrent 2, two forking commands hold
// both slots (a third job waits and, its context ending, is ErrBusy
// without running); cancelling them kills every process of both groups.
func TestHostileForkBomb(t *testing.T) {
	dir := t.TempDir()
	p, _ := newProc(t, ProcessConfig{Command: script, MaxConcurrent: 2, Grace: time.Second})
	fds := baseline(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { _, errs[i] = p.Execute(ctx, jobInput(10+i, fmt.Sprintf(bomb, dir))) })
	}
	var pgids []int
	for i := range 2 {
		pgid := readPgid(t, filepath.Join(dir, "pg."+jobInput(10+i, "").JobID.String()))
		deadline := time.Now().Add(60 * time.Second)
		for len(liveMembers(pgid)) < 20 { // the bomb has forked
			if time.Now().After(deadline) {
				t.Fatalf("bomb %d: %d processes", i, len(liveMembers(pgid)))
			}
			time.Sleep(20 * time.Millisecond)
		}
		pgids = append(pgids, pgid)
	}
	bctx, bcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer bcancel()
	if out, err := p.Execute(bctx, jobInput(3, "touch "+dir+"/ran; echo ran")); !errors.Is(err, ErrBusy) {
		t.Fatalf("a third job beside two bombs at MaxConcurrent 2: %q, %v", out, err)
	}
	cancel()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrCanceled) {
			t.Fatalf("bomb %d: %v", i, err)
		}
	}
	for _, pgid := range pgids {
		groupGone(t, pgid)
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Fatal("the busy job ran")
	}
	healthy(t, p, fds)
}

// TestHostileGroupKillOnTimeout: a command that backgrounds children
// writing to stdout and stderr is killed with all of them at its timeout.
func TestHostileGroupKillOnTimeout(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script, Timeout: 500 * time.Millisecond, Grace: 500 * time.Millisecond})
	fds := baseline(t, p)
	f, pg := pgFile(t)
	_, err, took := run(t, p, jobInput(1, pg+"(while :; do echo x; sleep 0.05; done) & (while :; do echo y >&2; sleep 0.05; done) & sleep 60"))
	if !errors.Is(err, ErrTimeout) || took > 30*time.Second {
		t.Fatalf("%v after %v", err, took)
	}
	groupGone(t, readPgid(t, f))
	healthy(t, p, fds)
}

// TestHostileLeftovers: a command that exits 0 leaving a detached child
// behind succeeds, and the child is killed with the job.
func TestHostileLeftovers(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script})
	fds := baseline(t, p)
	f, pg := pgFile(t)
	out, err, _ := run(t, p, jobInput(1, pg+"sleep 60 </dev/null >/dev/null 2>&1 & echo done"))
	if err != nil || string(out) != "done\n" {
		t.Fatalf("%q, %v", out, err)
	}
	groupGone(t, readPgid(t, f))
	healthy(t, p, fds)
}

// TestHostileHeldPipes: a command that exits while a child it left holds
// stdout open does not hang the executor: Grace after the exit the job
// fails with ErrPipesHeld and the child is killed.
func TestHostileHeldPipes(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script, Grace: 300 * time.Millisecond})
	fds := baseline(t, p)
	f, pg := pgFile(t)
	out, err, took := run(t, p, jobInput(1, pg+"sleep 60 & echo done"))
	if !errors.Is(err, ErrPipesHeld) || out != nil || took > 30*time.Second {
		t.Fatalf("%q, %v after %v", out, err, took)
	}
	groupGone(t, readPgid(t, f))
	healthy(t, p, fds)
}

// TestHostileCancelMidRun: cancelling the context (a §10.5 JobCancel)
// while the command and its children run kills the whole group; the job
// is ErrCanceled and context.Canceled.
func TestHostileCancelMidRun(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script, Grace: 500 * time.Millisecond})
	fds := baseline(t, p)
	f, pg := pgFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Execute(ctx, jobInput(1, pg+"(while :; do sleep 0.05; done) & sleep 60"))
		done <- err
	}()
	pgid := readPgid(t, f)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("%v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("cancel did not end the job")
	}
	groupGone(t, pgid)
	healthy(t, p, fds)
}

// TestHostileStderrFlood: stderr is logged line by line up to LogLines,
// long lines cut, the rest counted in one summary; a flood that never
// ends is bounded the same way and ends at the timeout.
func TestHostileStderrFlood(t *testing.T) {
	p, rec := newProc(t, ProcessConfig{Command: script, LogLines: 10, Timeout: 500 * time.Millisecond, Grace: 500 * time.Millisecond})
	fds := baseline(t, p)
	out, err, _ := run(t, p, jobInput(1, `yes flood | head -n 100000 >&2; head -c 300000 /dev/zero | tr '\0' a >&2; echo ok`))
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("%q, %v", out, err)
	}
	logged := rec.with("command stderr")
	if len(logged) != 10 {
		t.Fatalf("%d stderr lines logged, want LogLines 10", len(logged))
	}
	for _, r := range logged {
		if l := attr(r, "line").String(); l != "flood" {
			t.Fatalf("logged %q", l)
		}
	}
	sum := rec.with("command stderr not all logged")
	if len(sum) != 1 || attr(sum[0], "lines").Int64() != 100001 || attr(sum[0], "bytes").Int64() != 600000+300000 {
		t.Fatalf("summary %v", sum)
	}

	p, rec = newProc(t, ProcessConfig{Command: script, LogLines: 5, Timeout: 500 * time.Millisecond, Grace: 500 * time.Millisecond})
	_, err, took := run(t, p, jobInput(2, `head -c 5000 /dev/zero | tr '\0' b >&2; echo >&2; yes flood >&2`))
	if !errors.Is(err, ErrTimeout) || took > 30*time.Second {
		t.Fatalf("endless stderr: %v after %v", err, took)
	}
	logged = rec.with("command stderr")
	if len(logged) != 5 {
		t.Fatalf("%d lines logged, want 5", len(logged))
	}
	if l := attr(logged[0], "line").String(); len(l) > maxLogLine+len(" …(cut)") || !strings.HasSuffix(l, "(cut)") {
		t.Fatalf("a 5000-byte line logged as %d bytes", len(l))
	}
	if sum := rec.with("command stderr not all logged"); len(sum) != 1 || attr(sum[0], "lines").Int64() <= 5 {
		t.Fatalf("summary %v", sum)
	}
	healthy(t, p, fds)
}
