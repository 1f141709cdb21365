//go:build unix

package executor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// script is a command that runs its payload as a shell script, so one
// executor runs the hostile job and the healthy one after it.
const script = `eval "$(cat)"`

// recorder is a slog handler that keeps every record.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

// with returns the records of that message.
func (r *recorder) with(msg string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.recs {
		if rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}

func attr(rec slog.Record, key string) slog.Value {
	var v slog.Value
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

// newProc builds a process executor with a recording logger.
func newProc(t *testing.T, cfg ProcessConfig) (*Process, *recorder) {
	t.Helper()
	rec := &recorder{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(rec)
	}
	p, err := NewProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// run executes one job with a generous context.
func run(t *testing.T, p *Process, in Input) ([]byte, error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := p.Execute(ctx, in)
	return out, err, time.Since(start)
}

// fdCount is the number of the test process's open descriptors.
func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// baseline runs one healthy job (so the runtime's poller exists) and
// returns the descriptor count.
func baseline(t *testing.T, p *Process) int {
	t.Helper()
	healthyJob(t, p)
	return fdCount(t)
}

// healthyJob runs a normal job on a script executor.
func healthyJob(t *testing.T, p *Process) {
	t.Helper()
	out, err, _ := run(t, p, jobInput(999, "printf healthy"))
	if err != nil || string(out) != "healthy" {
		t.Fatalf("a normal job after the hostile one: %q, %v", out, err)
	}
}

// healthy checks the executor still runs jobs, holds no slot, and that
// the test process has no more descriptors than before (no pipe leaked).
func healthy(t *testing.T, p *Process, fds int) {
	t.Helper()
	healthyJob(t, p)
	if n := p.Running(); n != 0 {
		t.Fatalf("%d slots still held", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := fdCount(t)
		if n <= fds {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d open descriptors, %d before the hostile job", n, fds)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readPgid polls for the file a command wrote its shell's $$ (its
// process group) to.
func readPgid(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || n <= 1 {
				t.Fatalf("pgid file %q", b)
			}
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pgid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupGone checks that the executor reaped the shell and that no
// process of the group is left:
// kill(-pgid, 0) is ESRCH. Killed members are reaped by init, which may
// take a moment; if it never does (an init that does not reap), the group
// must at least hold only zombies.
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	// The shell (pid pgid) was waited for: it is no zombie child of ours.
	var ws syscall.WaitStatus
	if pid, err := syscall.Wait4(pgid, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
		t.Fatalf("the shell %d was not waited for (wait4: %d, %v)", pgid, pid, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if live := liveMembers(pgid); len(live) > 0 {
		t.Fatalf("process group %d still has live members: %v", pgid, live)
	}
	t.Logf("process group %d holds only unreaped zombies", pgid)
}

// liveMembers lists the non-zombie processes of a group from /proc.
func liveMembers(pgid int) []string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var live []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:]) // state ppid pgrp …
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) || fields[0] == "Z" {
			continue
		}
		live = append(live, s[:i+1]+" "+fields[0])
	}
	return live
}
