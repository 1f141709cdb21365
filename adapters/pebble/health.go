package pebble

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	pdb "github.com/cockroachdb/pebble/v2"
)

// Errors of a failing disk and of a directory another store holds.
var (
	// ErrStorageFailed: pebble reported a background error (a flush or
	// compaction that could not write: a full disk, an I/O error) or a
	// block commit failed. The store keeps the first such error; from
	// then on every Begin and Commit fails at once with an error wrapping
	// ErrStorageFailed and that cause, and Err returns it. The store must
	// be closed; a node should stop (issue 18 #19).
	ErrStorageFailed = errors.New("pebble store: storage failed")
	// ErrDirInUse: another process (or another open Store of this
	// process) holds the data directory's lock.
	ErrDirInUse = errors.New("pebble store: data directory is in use by another process")
)

// health is a store's record of pebble's failures: its EventListener and
// its pebble Logger. It logs each kind of trouble once, not per
// occurrence (a full disk makes pebble retry a flush thousands of times a
// second).
type health struct {
	log    *slog.Logger
	dir    string
	err    atomic.Pointer[error] // the first failure, wrapping ErrStorageFailed
	failed chan struct{}         // closed with the first failure

	errorfOnce, stallOnce, slowOnce sync.Once
	repeats                         atomic.Uint64 // failures after the first
}

func newHealth(dir string, log *slog.Logger) *health {
	if log == nil {
		log = slog.Default()
	}
	return &health{log: log.With("store", dir), dir: dir, failed: make(chan struct{})}
}

// fail records cause as the store's failure if it is the first. The
// cause is logged as its text: slog formats an error value with %+v,
// which for pebble's errors is kilobytes of stack traces on one line.
func (h *health) fail(cause error) error {
	e := fmt.Errorf("%w: %s: %w", ErrStorageFailed, h.dir, cause)
	if h.err.CompareAndSwap(nil, &e) {
		h.log.Error("pebble store failed: every later block commit fails; stop the node and free the disk",
			"err", cause.Error(), "note", "later pebble errors are not logged")
		close(h.failed) // after the log line, so that a caller woken by Failed finds it
		return e
	}
	h.repeats.Add(1)
	return *h.err.Load()
}

// Err is the recorded failure, or nil.
func (h *health) Err() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (h *health) listener() *pdb.EventListener {
	return &pdb.EventListener{
		BackgroundError: func(err error) { h.fail(err) },
		WriteStallBegin: func(i pdb.WriteStallBeginInfo) {
			h.stallOnce.Do(func() { h.log.Warn("pebble write stall (logged once)", "reason", i.Reason) })
		},
		DiskSlow: func(i pdb.DiskSlowInfo) {
			h.slowOnce.Do(func() {
				h.log.Warn("slow disk (logged once)", "path", i.Path, "op", i.OpType.String(), "duration", i.Duration)
			})
		},
	}
}

// Infof implements pebble's Logger: informational lines (WAL recovery,
// compactions) go to the node's logger at Debug, never to stderr.
func (h *health) Infof(format string, args ...any) {
	h.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

// Errorf implements pebble's Logger: the first error line is logged,
// later ones are not (the failures that matter arrive as background
// errors).
func (h *health) Errorf(format string, args ...any) {
	h.errorfOnce.Do(func() {
		h.log.Error("pebble: "+fmt.Sprintf(format, args...), "note", "later pebble error lines are not logged")
	})
}

// Fatalf implements pebble's Logger: pebble calls it when it cannot go on
// (e.g. a WAL write failed, "fatal commit error") and requires that it
// not return. The failure is recorded and logged, then the process exits
// as pebble's default logger does.
func (h *health) Fatalf(format string, args ...any) {
	h.fail(fmt.Errorf(format, args...))
	pdb.DefaultLogger.Fatalf(format, args...)
}

// Err is the store's storage failure (wrapping ErrStorageFailed and the
// first cause), or nil while the disk works. A node should stop when it
// is not nil; Failed signals the same without polling.
func (s *Store) Err() error { return s.health.Err() }

// Stats is a snapshot of a store's health and of pebble's own metrics,
// read at scrape time by the node's collector (cip11_store_*,
// client_golang's collectors.NewDBStatsCollector pattern).
type Stats struct {
	// Failed: the store recorded its storage failure (Err); Failures
	// counts it and the failures after it.
	Failed   bool
	Failures uint64
	// Pebble's: disk space used, estimated compaction debt and read
	// amplification now; flushes, compactions and WAL bytes written since
	// Open. Zero once the store is closed.
	DiskUsageBytes      uint64
	CompactionDebtBytes uint64
	ReadAmp             int
	Flushes             int64
	Compactions         int64
	WALBytesWritten     uint64
}

// Stats returns the store's Stats. It takes no lock a block commit holds.
func (s *Store) Stats() Stats {
	var st Stats
	if s.health.Err() != nil {
		st.Failed, st.Failures = true, 1+s.health.repeats.Load()
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.closed.Load() {
		return st
	}
	m := s.db.Metrics()
	st.DiskUsageBytes, st.CompactionDebtBytes, st.ReadAmp = m.DiskSpaceUsage(), m.Compact.EstimatedDebt, m.ReadAmp()
	st.Flushes, st.Compactions, st.WALBytesWritten = m.Flush.Count, m.Compact.Count, m.WAL.BytesWritten
	return st
}

// Failed is closed when the store records its storage failure (Err).
func (s *Store) Failed() <-chan struct{} { return s.health.failed }

// lockInUse reports whether err is pebble's failure to take the
// directory lock because someone holds it: flock's EWOULDBLOCK from
// another process, or pebble's in-process check (an error without an
// errno, recognised by its text).
func lockInUse(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EAGAIN) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// MaxChainIdentity bounds SetChainIdentity's value.
const MaxChainIdentity = 4096

// ErrChainIdentity: SetChainIdentity was given an empty or oversized value.
var ErrChainIdentity = errors.New("pebble store: invalid chain identity")

// ChainIdentity is the chain identity recorded by SetChainIdentity (ok
// false: none). The store does not interpret it; cip11 replay records its
// chain log's chain id and header hash, so a store of another chain is
// refused by name rather than by a diverging digest.
func (s *Store) ChainIdentity() (id []byte, ok bool, err error) {
	if err := s.lock(); err != nil {
		return nil, false, err
	}
	defer s.mu.Unlock()
	return get(s.db, []byte(keyChain))
}

// SetChainIdentity records id (1 to MaxChainIdentity bytes) as the
// store's chain identity, at once and durably (outside any block batch).
func (s *Store) SetChainIdentity(id []byte) error {
	if len(id) == 0 || len(id) > MaxChainIdentity {
		return fmt.Errorf("%w: %d bytes", ErrChainIdentity, len(id))
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.health.Err(); err != nil {
		return err
	}
	if err := s.db.Set([]byte(keyChain), id, pdb.Sync); err != nil {
		return s.health.fail(err)
	}
	return nil
}

// dirInUseError is ErrDirInUse for one directory: its text is
// "data directory DIR is in use by another process"; it unwraps to
// pebble's lock error.
type dirInUseError struct {
	dir   string
	cause error
}

func (e *dirInUseError) Error() string {
	return fmt.Sprintf("data directory %s is in use by another process", e.dir)
}
func (e *dirInUseError) Is(target error) bool { return target == ErrDirInUse }
func (e *dirInUseError) Unwrap() error        { return e.cause }
