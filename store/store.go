package store

import (
	"errors"

	"github.com/cip11/cip11"

	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
)

// Store is the CIP-11 chain state of one node.
//
// Block lifecycle: Begin(h) opens block h's batch; every write until
// Commit or Discard belongs to it, and every read in between sees the
// batch's own earlier writes. Commit makes all of them durable together
// with the height marker h (LastCommitted then reports h). Discard drops
// them: the state is exactly what it was after the last Commit. Writes
// outside a batch fail with ErrNoBatch. h must be greater than the last
// committed height (ErrHeightOrder).
//
// The accessors return views of this one store (the same batch), fixed for
// the store's life, so an engine.Config can hold them.
//
// Registry views (state.Registry.At) are immutable: a view taken at a
// committed height h never changes under later writes. At(h) for a height
// inside the batch (h = the batch height) shows the batch's writes; a
// height between the last committed block and the open batch (a height no
// block was committed at) shows the committed state, and becomes immutable
// once a commit passes it: if the batch is discarded, a later block may
// still be written at that height. A height above the open batch (or,
// without one, above the last committed block), or older than the
// retention window, returns an error wrapping state.ErrUnknownHeight.
type Store interface {
	Registry() state.Registry
	Registrar() Registrar
	Jobs() engine.JobStore
	Pending() engine.PendingStore
	MRU() mru.Store

	Begin(h uint64) error
	Commit() error
	Discard()
	// LastCommitted returns the height of the last committed block; ok is
	// false for an empty store.
	LastCommitted() (h uint64, ok bool, err error)

	// Enumerations for state digests (docs/chainlog.md), each including the
	// open batch's writes.
	// LiveJobs returns the ids of pending or assigned jobs, ascending.
	LiveJobs() ([][32]byte, error)
	// MRURecords returns every mru_key record, ascending by D15 key.
	MRURecords() ([]MRUEntry, error)
	// PendingRecords returns every live pending record in due-round key
	// order (§9.2 index order).
	PendingRecords() ([]engine.PendingSelectionV1, error)

	Close() error
}

// MRUEntry is one stored mru_key record.
type MRUEntry struct {
	Submitter cip11.Address
	Kind      mru.JobKind
	Record    mru.Record
}

// Registrar is the Runner Registry write side, used at the end of a block
// (registrations, heartbeats, health and stake changes) at the batch
// height.
type Registrar interface {
	// Register appends r.Address to ACTIVE_RUNNERS (the next registry
	// index, §7.2); an already registered address wraps
	// state.ErrAlreadyRegistered.
	Register(r state.Runner) error
	// Update stores a new record for a registered runner
	// (state.ErrNotRegistered otherwise); it never reorders ACTIVE_RUNNERS.
	Update(r state.Runner) error
	// Latest returns the newest record of a runner, including the batch's.
	Latest(addr cip11.Address) (state.Runner, bool, error)
}

// Lifecycle errors.
var (
	ErrNoBatch     = errors.New("store: write outside a block batch")
	ErrBatchOpen   = errors.New("store: a block batch is already open")
	ErrHeightOrder = errors.New("store: block height not above the last committed height")
	ErrClosed      = errors.New("store: closed")
)
