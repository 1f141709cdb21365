package quic

import (
	"context"
	"net"
	"sync"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// ValidatorSets is the consensus §5.4 interface as the transport consumes
// it: the §5.3 validator-set view (current snapshot and, during an
// OVERLAP_BLOCKS window, its predecessor) in force at height h. The
// transport re-reads it on every [Server.Tick] and [Client.Tick]: after
// changing it (ValidatorSetActivated), tick again — a repeated height
// is enough for a Server.
type ValidatorSets interface {
	EpochsAt(h uint64) (validators.Epochs, error)
}

// UpcomingSets is an optional [ValidatorSets] that also knows the next
// snapshot already emitted (§5.4) but not yet active at a height: a Hello
// that offers its pair a few blocks early (a runner one block ahead of
// this validator at an activation) is refused as not ready
// (Goodbye{Draining} with retry_after_blocks, SPEC-NOTES N19), not as
// outside the subset.
type UpcomingSets interface {
	Upcoming(h uint64) (*validators.Snapshot, bool)
}

// EarlyOfferBlocks bounds how far ahead of its activation an offered
// snapshot pair is refused as not ready rather than unknown.
const EarlyOfferBlocks = 2

// StaticValidatorSets is an in-memory [ValidatorSets] (a genesis-anchored
// snapshot, or one a test replaces). It is safe for concurrent use.
type StaticValidatorSets struct {
	mu sync.RWMutex
	e  validators.Epochs
}

// NewStaticValidatorSets returns a view that answers e at every height.
func NewStaticValidatorSets(e validators.Epochs) *StaticValidatorSets {
	return &StaticValidatorSets{e: e}
}

// EpochsAt implements [ValidatorSets].
func (s *StaticValidatorSets) EpochsAt(uint64) (validators.Epochs, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.e.Current == nil {
		return validators.Epochs{}, validators.ErrNoActiveSnapshot
	}
	return s.e, nil
}

// Set replaces the view (ValidatorSetActivated, §5.3). Servers and
// clients act on it at their next Tick.
func (s *StaticValidatorSets) Set(e validators.Epochs) {
	s.mu.Lock()
	s.e = e
	s.mu.Unlock()
}

// Mempool is the node's normal transaction-admission path (§10.3). The
// validator forwards a result transaction verbatim: raw is exactly the
// frame's tx_bytes and tx its decoded form. Implementations must not
// retain raw beyond the call unless they copy it.
type Mempool interface {
	Submit(raw []byte, tx wire.Transaction) error
}

// MemMempool is an in-memory [Mempool] that records what it was given.
type MemMempool struct {
	mu  sync.Mutex
	txs [][]byte
}

// Submit implements [Mempool].
func (m *MemMempool) Submit(raw []byte, _ wire.Transaction) error {
	m.mu.Lock()
	m.txs = append(m.txs, append([]byte(nil), raw...))
	m.mu.Unlock()
	return nil
}

// Txs returns copies of the forwarded transactions in arrival order.
func (m *MemMempool) Txs() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]byte, len(m.txs))
	for i, t := range m.txs {
		out[i] = append([]byte(nil), t...)
	}
	return out
}

// Directory resolves a validator's raw peer_pubkey to its UDP address
// (operator configuration or discovery; the spec does not define it).
type Directory interface {
	Addr(v validators.PeerKey) (net.Addr, bool)
}

// StaticDirectory is an in-memory [Directory].
type StaticDirectory struct {
	mu sync.RWMutex
	m  map[validators.PeerKey]net.Addr
}

// Put sets v's address.
func (d *StaticDirectory) Put(v validators.PeerKey, a net.Addr) {
	d.mu.Lock()
	if d.m == nil {
		d.m = map[validators.PeerKey]net.Addr{}
	}
	d.m[v] = a
	d.mu.Unlock()
}

// Addr implements [Directory].
func (d *StaticDirectory) Addr(v validators.PeerKey) (net.Addr, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	a, ok := d.m[v]
	return a, ok
}

// Job is an accepted assignment handed to the runner's [Executor] (§10.1).
type Job struct {
	Assignment *wire.JobAssignment
	// Progress sends a §10.4 JobProgress on the accepted stream; fraction
	// above 100 is clamped. Safe to call from any goroutine; a no-op once
	// the stream is gone.
	Progress func(fraction uint8, detail string)
}

// Result is what an execution produced: complete runner-signed
// transactions in the node's Transaction::write encoding (§10.3).
type Result struct {
	// Commit is the SystemInstruction::JobResultCommit transaction. It is
	// required when verification.runners > 1 and sent first; nil skips the
	// commit (allowed only for verification.runners == 1).
	Commit []byte
	// Reveal is the SystemInstruction::JobResultSubmit transaction.
	Reveal []byte
	// RevealOpens is the first finalized height of the CIP-2 reveal window;
	// the reveal is neither sent nor rebroadcast before it (0: no window).
	RevealOpens uint64
}

// Executor runs accepted jobs (§10.1). Execute must return promptly once
// ctx is cancelled (JobCancel, §10.5); results returned after that are
// dropped unless a commitment was already sent.
type Executor interface {
	Execute(ctx context.Context, job *Job) (Result, error)
}

// ExecutorFunc adapts a function to [Executor].
type ExecutorFunc func(ctx context.Context, job *Job) (Result, error)

// Execute implements [Executor].
func (f ExecutorFunc) Execute(ctx context.Context, job *Job) (Result, error) { return f(ctx, job) }

// ResultSubmitter is the runner's self-submit path for retained result
// transactions (§10.3): the REST /submit endpoint or another validator.
type ResultSubmitter interface {
	// Submit sends tx through normal admission; duplicate or nonce-too-low
	// answers after inclusion are not failures.
	Submit(tx []byte) error
	// Settled reports whether tx is canonically included, its job terminal,
	// or its instruction no longer valid, ending the schedule.
	Settled(jobID cip11.Hash, tx []byte) bool
}
