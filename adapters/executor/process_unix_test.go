//go:build unix

package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProcessUpper: `tr a-z A-Z` turns the payload "hello cip11" into the
// output "HELLO CIP11" (stdin in, stdout out).
func TestProcessUpper(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: "tr a-z A-Z"})
	out, err, _ := run(t, p, jobInput(1, "hello cip11"))
	if err != nil || string(out) != "HELLO CIP11" {
		t.Fatalf("%q, %v", out, err)
	}
}

// TestProcessEnv: the job's id (64 hex digits), kind, M, deadline and
// assignment height are in the environment, added to the runner's
// environment, or to a configured Env that replaces it.
func TestProcessEnv(t *testing.T) {
	t.Setenv("CIP11_TEST_MARK", "inherited")
	p, _ := newProc(t, ProcessConfig{Command: `printf '%s|%s|%s|%s|%s|%s' "$CIP11_JOB_ID" "$CIP11_JOB_KIND" "$CIP11_JOB_RUNNERS" "$CIP11_DEADLINE_BLOCK" "$CIP11_ASSIGNMENT_HEIGHT" "$CIP11_TEST_MARK"`})
	in := jobInput(3, "")
	in.Kind, in.Runners, in.DeadlineBlock, in.AssignmentHeight = 2, 3, 1<<40, 77
	out, err, _ := run(t, p, in)
	want := fmt.Sprintf("%s|2|3|%d|77|inherited", in.JobID, uint64(1<<40))
	if err != nil || string(out) != want {
		t.Fatalf("%q, %v; want %q", out, err, want)
	}
	if len(in.JobID.String()) != 64 {
		t.Fatal("job id is not 64 hex digits")
	}
	p, _ = newProc(t, ProcessConfig{Env: []string{"ONLY=1"}, Command: `printf '%s|%s|%s' "$ONLY" "${CIP11_TEST_MARK-unset}" "$CIP11_JOB_RUNNERS"`})
	out, err, _ = run(t, p, in)
	if err != nil || string(out) != "1|unset|3" {
		t.Fatalf("configured env: %q, %v", out, err)
	}
}

// TestProcessOutputBound: stdout of exactly MaxOutput bytes passes, one
// byte more fails with ErrOutputTooLarge, in one write or several.
func TestProcessOutputBound(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script, MaxOutput: 16})
	fds := baseline(t, p)
	out, err, _ := run(t, p, jobInput(1, "printf 0123456789abcdef"))
	if err != nil || string(out) != "0123456789abcdef" {
		t.Fatalf("16 bytes at a bound of 16: %q, %v", out, err)
	}
	out, err, _ = run(t, p, jobInput(2, "printf 01234567; printf 89abcdef"))
	if err != nil || len(out) != 16 {
		t.Fatalf("16 bytes in two writes: %q, %v", out, err)
	}
	for _, s := range []string{"printf 0123456789abcdefX", "printf 01234567; printf 89abcdef; printf X"} {
		out, err, _ = run(t, p, jobInput(3, s))
		if !errors.Is(err, ErrOutputTooLarge) || out != nil {
			t.Fatalf("17 bytes (%s): %q, %v", s, out, err)
		}
	}
	healthy(t, p, fds)
}

// TestProcessDefaultOutputBound: with no MaxOutput the bound is 4096.
func TestProcessDefaultOutputBound(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: script})
	if out, err, _ := run(t, p, jobInput(1, "head -c 4096 /dev/zero")); err != nil || len(out) != DefaultMaxOutput {
		t.Fatalf("4096 bytes: %d, %v", len(out), err)
	}
	if _, err, _ := run(t, p, jobInput(1, "head -c 4097 /dev/zero")); !errors.Is(err, ErrOutputTooLarge) {
		t.Fatalf("4097 bytes: %v", err)
	}
}

// TestProcessExitStatus: a non-zero exit is ErrExitStatus naming the code
// and the tail of stderr, and wraps the *exec.ExitError.
func TestProcessExitStatus(t *testing.T) {
	p, rec := newProc(t, ProcessConfig{Command: script})
	fds := baseline(t, p)
	out, err, _ := run(t, p, jobInput(1, "echo partial; echo oops >&2; exit 3"))
	if !errors.Is(err, ErrExitStatus) || out != nil {
		t.Fatalf("%q, %v", out, err)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit code: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "oops") {
		t.Fatalf("message %q names neither the code nor stderr", msg)
	}
	if recs := rec.with("command stderr"); len(recs) != 1 || attr(recs[0], "line").String() != "oops" ||
		attr(recs[0], "job").String() != jobInput(1, "").JobID.String() {
		t.Fatalf("stderr log %v", recs)
	}
	healthy(t, p, fds)
}

// TestProcessLargePayload: a payload larger than a pipe's buffer reaches a
// command that reads it, and does not block one that never reads stdin.
func TestProcessLargePayload(t *testing.T) {
	p, _ := newProc(t, ProcessConfig{Command: "wc -c"})
	big := bytes.Repeat([]byte("z"), 1<<20)
	out, err, _ := run(t, p, Input{Payload: big})
	if err != nil || strings.TrimSpace(string(out)) != strconv.Itoa(1<<20) {
		t.Fatalf("%q, %v", out, err)
	}
	p, _ = newProc(t, ProcessConfig{Command: "echo ignored"})
	out, err, took := run(t, p, Input{Payload: big})
	if err != nil || string(out) != "ignored\n" || took > 60*time.Second {
		t.Fatalf("%q, %v after %v", out, err, took)
	}
}

// TestProcessConcurrencyLimit: with MaxConcurrent 2, six jobs started at
// once never run more than two commands at a time (each counts the
// running markers, its own included, while it runs).
func TestProcessConcurrencyLimit(t *testing.T) {
	dir := t.TempDir()
	p, _ := newProc(t, ProcessConfig{MaxConcurrent: 2, Env: []string{"D=" + dir, "PATH=/usr/bin:/bin"},
		Command: `touch "$D/run.$$"; n=$(ls "$D" | grep -c '^run\.'); sleep 1; rm "$D/run.$$"; printf %s "$n"`})
	var wg sync.WaitGroup
	outs := make([]string, 6)
	errs := make([]error, 6)
	for i := range 6 {
		wg.Go(func() {
			out, err, _ := run(t, p, jobInput(i, ""))
			outs[i], errs[i] = string(out), err
		})
	}
	wg.Wait()
	for i := range 6 {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if n, err := strconv.Atoi(outs[i]); err != nil || n < 1 || n > 2 {
			t.Fatalf("job %d saw %q commands running (limit 2)", i, outs[i])
		}
	}
}

// TestProcessBusy: a job that cannot get a slot before its context ends
// is ErrBusy (and the context's error) and never runs; the slot holder,
// cancelled, frees it for the next job.
func TestProcessBusy(t *testing.T) {
	dir := t.TempDir()
	p, _ := newProc(t, ProcessConfig{MaxConcurrent: 1, Command: script})
	fds := baseline(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := make(chan error, 1)
	go func() {
		_, err := p.Execute(ctx, jobInput(1, fmt.Sprintf("echo $$ > %s/pg; sleep 60", dir)))
		held <- err
	}()
	pgid := readPgid(t, filepath.Join(dir, "pg"))
	bctx, bcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer bcancel()
	out, err := p.Execute(bctx, jobInput(2, "touch "+dir+"/ran; echo ran"))
	if !errors.Is(err, ErrBusy) || !errors.Is(err, context.DeadlineExceeded) || out != nil {
		t.Fatalf("waiting job: %q, %v", out, err)
	}
	cancel()
	if err := <-held; !errors.Is(err, ErrCanceled) {
		t.Fatalf("slot holder: %v", err)
	}
	groupGone(t, pgid)
	if matches, _ := filepath.Glob(dir + "/ran"); len(matches) != 0 {
		t.Fatal("the busy job ran")
	}
	healthy(t, p, fds)
}

// TestNewProcessRejects: a missing logger or command and out-of-range
// fields are ErrBadConfig; nil or zero executors and a nil context are
// ErrNilExecutor, never a panic.
func TestNewProcessRejects(t *testing.T) {
	ok := ProcessConfig{Command: "true"}
	bad := map[string]func(*ProcessConfig){
		"nil logger":       func(c *ProcessConfig) { c.Logger = nil },
		"empty command":    func(c *ProcessConfig) { c.Command = "  " },
		"nul command":      func(c *ProcessConfig) { c.Command = "true\x00" },
		"negative output":  func(c *ProcessConfig) { c.MaxOutput = -1 },
		"negative slots":   func(c *ProcessConfig) { c.MaxConcurrent = -1 },
		"negative timeout": func(c *ProcessConfig) { c.Timeout = -1 },
		"negative grace":   func(c *ProcessConfig) { c.Grace = -1 },
		"negative lines":   func(c *ProcessConfig) { c.LogLines = -1 },
		"bad env":          func(c *ProcessConfig) { c.Env = []string{"NOEQUALS"} },
		"missing shell":    func(c *ProcessConfig) { c.Shell = "/nonexistent/sh" },
	}
	for name, f := range bad {
		cfg := ok
		cfg.Logger = slog.New(&recorder{})
		f(&cfg)
		if _, err := NewProcess(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var p *Process
	if _, err := p.Execute(context.Background(), Input{}); !errors.Is(err, ErrNilExecutor) {
		t.Fatalf("nil process: %v", err)
	}
	if _, err := (&Process{}).Execute(context.Background(), Input{}); !errors.Is(err, ErrNilExecutor) {
		t.Fatalf("zero process: %v", err)
	}
	good, _ := newProc(t, ok)
	var nilCtx context.Context
	if _, err := good.Execute(nilCtx, Input{}); !errors.Is(err, ErrNilExecutor) {
		t.Fatalf("nil context: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := good.Execute(ctx, Input{}); !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}
