package pebble

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cip11/cip11/state"
)

// countingHandler counts the log records per level and keeps their text.
type countingHandler struct {
	mu    sync.Mutex
	n     map[slog.Level]int
	lines []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[slog.Level]int{}
	}
	h.n[r.Level]++
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.lines = append(h.lines, b.String())
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
func (h *countingHandler) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[l]
}

// enospc fails every write to an sstable with ENOSPC while on: flushes and
// compactions fail (pebble's background errors), the WAL still works.
type enospc struct {
	on    atomic.Bool
	count atomic.Int64
}

func (e *enospc) inject(op errorfs.Op) error {
	if !e.on.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite || !strings.HasSuffix(op.Path, ".sst") {
		return nil
	}
	e.count.Add(1)
	return fmt.Errorf("injected: %w", syscall.ENOSPC)
}

// TestBackgroundErrorFailsFast (issue 18 #19): a flush that cannot write
// (a full disk) is recorded as the store's failure: Err and Failed report
// it (wrapping ErrStorageFailed and ENOSPC), every later Begin and Commit
// fails at once with it, it is logged once however often pebble retries,
// and Close still returns. Before, the background errors went to pebble's
// default logger, one line per retry, and nothing reached the caller.
func TestBackgroundErrorFailsFast(t *testing.T) {
	dir := t.TempDir()
	inj := &enospc{}
	logs := &countingHandler{}
	s, err := OpenFS(dir, Options{Sync: SyncNever, Logger: slog.New(logs)}, errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(inj.inject)))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = s.Close()
		}
	}()
	must(t, s.Register(1, addr(1)))
	if err := s.Err(); err != nil {
		t.Fatalf("Err before any fault: %v", err)
	}
	must(t, s.Begin(2))
	must(t, s.Registrar().Register(state.Runner{Address: addr(2)}))
	must(t, s.Commit())

	inj.on.Store(true)
	if err := AsyncFlush(s); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Failed():
	case <-time.After(20 * time.Second):
		t.Fatal("no failure recorded 20 s after a flush that cannot write")
	}
	if st := s.Stats(); !st.Failed || st.Failures < 1 {
		t.Fatalf("Stats after the failure: %+v", st)
	}
	err = s.Err()
	if !errors.Is(err, ErrStorageFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Err = %v, want ErrStorageFailed wrapping ENOSPC", err)
	}
	// pebble retries the flush; let it fail many times.
	deadline := time.Now().Add(10 * time.Second)
	for inj.count.Load() < 50 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Begin(3); !errors.Is(err, ErrStorageFailed) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Begin after the failure: %v", err)
	}
	if err := s.Commit(); err == nil {
		t.Error("Commit after the failure succeeded")
	}
	t.Logf("%d failed sstable writes", inj.count.Load())
	if n := logs.count(slog.LevelError); n != 1 {
		t.Errorf("%d error log lines after %d failed writes, want 1: %q", n, inj.count.Load(), logs.lines)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
		closed = true
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return on a failing disk")
	}
}

// TestOpenTwiceDirInUse (issue 18 #15): a second Open of a directory in
// use says so with ErrDirInUse, not "resource temporarily unavailable";
// after Close the directory opens again.
func TestOpenTwiceDirInUse(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{Sync: SyncNever})
	_, err := Open(dir, Options{Sync: SyncNever})
	if !errors.Is(err, ErrDirInUse) || !strings.Contains(err.Error(), "data directory "+dir+" is in use by another process") {
		t.Fatalf("second Open: %v, want ErrDirInUse naming %s", err, dir)
	}
	must(t, s.Close())
	s = mustOpen(t, dir, Options{Sync: SyncNever})
	must(t, s.Close())
}

// TestOpenLockedByOtherProcess: a directory another process holds (a
// child test binary with the store open) is ErrDirInUse.
func TestOpenLockedByOtherProcess(t *testing.T) {
	if dir := os.Getenv("CIP11_LOCK_HOLD"); dir != "" {
		s, err := Open(dir, Options{Sync: SyncNever})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println("open")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
		_ = s.Close()
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestOpenLockedByOtherProcess$")
	cmd.Env = append(os.Environ(), "CIP11_LOCK_HOLD="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	out.WriteString(line)
	if strings.TrimSpace(line) != "open" {
		t.Fatalf("child: %q", out.String())
	}
	_, err = Open(dir, Options{Sync: SyncNever})
	if !errors.Is(err, ErrDirInUse) || errors.Is(err, ErrNotAStore) {
		t.Fatalf("Open of a directory another process holds: %v, want ErrDirInUse", err)
	}
}

// TestChainIdentity: the identity survives a reopen; empty or oversized
// values are refused.
func TestChainIdentity(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{Sync: SyncNever})
	if _, ok, err := s.ChainIdentity(); ok || err != nil {
		t.Fatalf("fresh store has an identity: %v %v", ok, err)
	}
	for _, bad := range [][]byte{nil, make([]byte, MaxChainIdentity+1)} {
		if err := s.SetChainIdentity(bad); !errors.Is(err, ErrChainIdentity) {
			t.Errorf("%d bytes: %v", len(bad), err)
		}
	}
	must(t, s.SetChainIdentity([]byte("chain X")))
	must(t, s.Close())
	s = mustOpen(t, dir, Options{Sync: SyncNever})
	defer s.Close()
	if id, ok, err := s.ChainIdentity(); string(id) != "chain X" || !ok || err != nil {
		t.Fatalf("after reopen: %q %v %v", id, ok, err)
	}
}

// TestOpenOnFullDiskFails (issue 18 #19): a store whose WAL holds writes
// not yet flushed is reopened on a disk where no sstable can be written.
// pebble's Open flushes the replayed memtable and waits for that flush,
// which on a full disk fails and is retried for ever: Open never returned
// and a restarted validator wedged before printing anything. Open must
// return ErrStorageFailed wrapping ENOSPC, logged once, and once space
// returns the store opens with its data.
func TestOpenOnFullDiskFails(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	must(t, s.Register(1, addr(1)))
	must(t, s.Begin(2))
	must(t, s.Registrar().Register(state.Runner{Address: addr(2)}))
	must(t, s.Commit())
	must(t, s.Close()) // the commits stay in the WAL: Close does not flush

	inj := &enospc{}
	inj.on.Store(true)
	var logs lockedBuffer
	type result struct {
		s   *Store
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := OpenFS(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(inj.inject)))
		ch <- result{s, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("Open on a full disk did not return in 20 s (%d failed sstable writes)", inj.count.Load())
	}
	if r.err == nil {
		_ = r.s.Close()
		t.Fatalf("Open on a full disk succeeded (%d failed sstable writes)", inj.count.Load())
	}
	if !errors.Is(r.err, ErrStorageFailed) || !errors.Is(r.err, syscall.ENOSPC) {
		t.Fatalf("Open on a full disk: %v, want ErrStorageFailed wrapping ENOSPC", r.err)
	}
	// One line, the cause as text: slog's text handler formats an error
	// value with %+v, kilobytes of pebble stack traces.
	if out := logs.String(); strings.Count(out, "\n") != 1 || strings.Contains(out, "stack trace") || !strings.Contains(out, "no space left on device") {
		t.Errorf("log, want one line naming the full disk without a stack trace:\n%s", out)
	}
	// Space returns: the abandoned open lets go of the directory once its
	// flush succeeds, and the store opens with both runners.
	inj.on.Store(false)
	var s2 *Store
	waitUntil := time.Now().Add(20 * time.Second)
	for {
		var err error
		if s2, err = Open(dir, Options{}); err == nil {
			break
		}
		if !errors.Is(err, ErrDirInUse) || time.Now().After(waitUntil) {
			t.Fatalf("Open after space returned: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer s2.Close()
	if h, ok, err := s2.LastCommitted(); err != nil || !ok || h != 2 {
		t.Fatalf("reopened at %d (%v, %v), want height 2", h, ok, err)
	}
}

// lockedBuffer is a log destination safe for pebble's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Stats (read by the node's cip11_store_* collector at scrape time)
// reports pebble's metrics while the store is open and zeros, without
// touching the closed database, after Close.
func TestStatsOpenAndClosed(t *testing.T) {
	s, err := Open(t.TempDir(), Options{Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Register(1, addr(1)))
	must(t, s.Begin(2))
	must(t, s.Registrar().Register(state.Runner{Address: addr(2)}))
	must(t, s.Commit())
	if st := s.Stats(); st.Failed || st.Failures != 0 || st.DiskUsageBytes == 0 || st.WALBytesWritten == 0 {
		t.Fatalf("Stats of an open store: %+v", st)
	}
	must(t, s.Close())
	if st := s.Stats(); st != (Stats{}) {
		t.Fatalf("Stats of a closed store: %+v", st)
	}
}
