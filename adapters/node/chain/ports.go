package chain

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/nodetx"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/store"
)

// Sentinel errors of the chain core. Callers test them with errors.Is.
var (
	// ErrBadRequest: a submission is malformed or invalid.
	ErrBadRequest = nodetx.ErrBadRequest
	// ErrDuplicate: the transaction or job is already known (§10.3: not a
	// failure).
	ErrDuplicate = errors.New("node: duplicate transaction")
	// ErrNilKey: a nil key was given.
	ErrNilKey = nodetx.ErrNilKey
	// ErrNilConfig: a required dependency of [New] is missing.
	ErrNilConfig = errors.New("node: required configuration is missing")
	// ErrBlockLog: the block log does not agree with the store (recovery).
	ErrBlockLog = errors.New("node: block log does not match the store")
	// ErrFailed: a block-log append, state commit or journal write failed;
	// the core accepts no further step. The driver reports it and stops.
	ErrFailed = errors.New("node: chain core failed")
	// ErrInvalidBlock: a block does not execute (Check, Apply).
	ErrInvalidBlock = errors.New("node: invalid block")
	// ErrMempoolFull: the mempool holds Config.MaxMempool entries; the
	// submission may be retried after the next blocks (503).
	ErrMempoolFull = errors.New("node: mempool full")
	// ErrOutOfOrder: a step was called out of its order (a block that is
	// not Height()+1, Commit without Apply).
	ErrOutOfOrder = errors.New("node: step out of order")
)

// Executor executes blocks over the state store (blockexec.Executor in a
// validator). Execute leaves the block's writes open until Commit or
// Discard; at most one block is open at a time.
type Executor interface {
	Execute(b *chainlog.Block) (chainlog.Output, error)
	Commit() error
	Discard()
	// LastCommitted is the store's committed height (ok false: none).
	LastCommitted() (h uint64, ok bool)
	// Store is the committed state (registry views, registrar, pending
	// selections) that block building reads.
	Store() store.Store
	// CheckReconfigure reports whether block h may carry r
	// (blockexec.Executor.CheckReconfigure, SPEC-NOTES C11).
	CheckReconfigure(h uint64, r *chainlog.Reconfigure) error
	// RestoreReconfiguration extends the schedule by r, a reconfiguration a
	// committed block carried (recovery: the store has the block, the
	// schedule is rebuilt from the block log).
	RestoreReconfiguration(r *chainlog.Reconfigure) error
}

// BlockLog is the durable, append-only block history (docs/chainlog.md).
// Append must make b durable before it returns (the driver's
// implementation fsyncs); a block is appended before its state is
// committed, so after a crash the log is at most one block ahead.
type BlockLog interface {
	Append(b *chainlog.Block) error
}

// Journal records accepted job submissions before they are acknowledged,
// so that nothing accepted is lost across a restart. Append must leave the
// journal as it was when it fails (no torn record).
type Journal interface {
	Append(spec []byte) error
}

// Archive keeps the final view of jobs pruned from memory (GET /jobs/{id}
// of an old job). Put may be called again for a job already archived (a
// restart replays the block log); the newer view wins.
type Archive interface {
	Put(views []job.View) error
	Get(id cip11.Hash) (job.View, bool, error)
}

// ArchiveLister is an [Archive] that can list its jobs (GET /jobs): List
// returns at most q.Limit archived views matching q, in listing order
// (newest first, job.Key). [Core.List] lists archived jobs only when the
// archive implements it.
type ArchiveLister interface {
	List(q job.Query) ([]job.View, error)
}

// History records the job events a block log cannot rebuild (pushes, acks,
// outcomes, cancels: the transport's, not the chain's). Record must not
// block; losing a record loses history, never state.
type History interface {
	Record(job cip11.Hash, e job.Event)
}

// OutputHistory is a History that also keeps a completed job's output,
// which the block log cannot rebuild either: it rides in the reveals
// (§10.3), which the block log does not hold. The core hands it the
// majority's output when a Verified commits; [Core.RestoreOutput] takes it
// back at start.
type OutputHistory interface {
	RecordOutput(job cip11.Hash, output []byte)
}

// Consensus is what block production decides for block h beyond its
// transactions: the proposal round, the parent beacon R_{h−1}, the
// finalized height of the block's execution context (D22) and the seeds
// the proposer has observed (for ConsumedSeedsV1, §9.2).
type Consensus struct {
	Round        seed.Round
	ParentBeacon *chainlog.Beacon
	Finalized    *uint64
	// Seed returns the certified seed of round r, ok false when the
	// proposer has not observed it (withholding delays, §9.2).
	Seed func(r seed.Round) (seed.Signature, bool, error)
}

// MemBlockLog is an in-memory [BlockLog].
type MemBlockLog struct {
	Blocks []chainlog.Block
	// Fail, if set, is returned by Append (fault injection).
	Fail error
}

// Append implements [BlockLog].
func (l *MemBlockLog) Append(b *chainlog.Block) error {
	if l.Fail != nil {
		return l.Fail
	}
	l.Blocks = append(l.Blocks, *b)
	return nil
}

// MemJournal is an in-memory [Journal].
type MemJournal struct {
	Specs [][]byte
	Fail  error
}

// Append implements [Journal].
func (j *MemJournal) Append(spec []byte) error {
	if j.Fail != nil {
		return j.Fail
	}
	j.Specs = append(j.Specs, slices.Clone(spec))
	return nil
}

// MemArchive is an in-memory [Archive].
type MemArchive struct {
	m map[cip11.Hash]job.View
}

// Put implements [Archive].
func (a *MemArchive) Put(views []job.View) error {
	if a.m == nil {
		a.m = map[cip11.Hash]job.View{}
	}
	for _, v := range views {
		a.m[v.ID] = v
	}
	return nil
}

// Get implements [Archive].
func (a *MemArchive) Get(id cip11.Hash) (job.View, bool, error) {
	v, ok := a.m[id]
	return v, ok, nil
}

// List implements [ArchiveLister].
func (a *MemArchive) List(q job.Query) ([]job.View, error) {
	var out []job.View
	for _, v := range a.m {
		if q.Match(v) {
			out = append(out, v)
		}
	}
	job.SortNewestFirst(out)
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// Len is the number of archived jobs.
func (a *MemArchive) Len() int { return len(a.m) }

func failed(what string, err error) error { return fmt.Errorf("%w: %s: %w", ErrFailed, what, err) }
