package store

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence/modea"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
)

// Mem is the in-memory [Store]: the package's in-memory stores
// (state.MemRegistry, engine.MemJobStore, engine.MemPendingStore and an
// mru.KVStore over an mru.MemKV) under the block lifecycle, so its
// behaviour is theirs. A block's writes go straight to them, except job
// writes, which wait in a per-block overlay until Commit; Discard undoes
// the rest from an undo log (pending and MRU writes) and
// state.MemRegistry.Rollback (registry writes). Commit and Discard cost
// the block's writes, never a copy of the state; a Discard that undoes
// registry writes costs O(runners).
//
// Every height is retained: Registry().At(h) serves any h up to the open
// batch's height (or, outside a batch, the last committed height); a
// height above that wraps state.ErrUnknownHeight, since its view could
// still change. Nothing is persisted: Close drops an open batch, and every
// later call returns ErrClosed (views taken earlier stay readable).
//
// A Mem is not safe for concurrent use.
type Mem struct {
	reg     *state.MemRegistry
	jobs    *engine.MemJobStore
	pending *engine.MemPendingStore
	mruKV   mru.MemKV
	mruKeys []string // keys of mruKV, ascending

	open    bool
	height  uint64 // the open batch's height
	last    uint64 // last committed height, if hasLast
	hasLast bool
	closed  bool

	// The open batch.
	jobOverlay map[[32]byte]engine.JobRecord // job writes, applied at Commit
	pendUndo   []pendingUndo
	mruUndo    []mruUndo
	regWritten bool

	anchors    map[cip11.Address]modea.Record // §8.3 Mode-A state (modea.go)
	anchorUndo []modeAUndo
}

type pendingUndo struct {
	put bool // the write was a Put (undo: delete r); else a Delete (undo: put r back)
	r   engine.PendingSelectionV1
}

type mruUndo struct {
	key  string
	prev []byte // previous value, if had
	had  bool
}

// NewMem returns an empty in-memory store whose reputation configuration
// is state.DefaultReputationConfig.
func NewMem() *Mem { return NewMemConfig(state.DefaultReputationConfig()) }

// NewMemConfig returns an empty in-memory store whose reputation
// configuration from height 0 on is cfg.
func NewMemConfig(cfg state.ReputationConfig) *Mem {
	return &Mem{
		reg:        state.NewMemRegistry(cfg),
		jobs:       engine.NewMemJobStore(),
		pending:    engine.NewMemPendingStore(),
		mruKV:      mru.MemKV{},
		jobOverlay: make(map[[32]byte]engine.JobRecord),
	}
}

var _ Store = (*Mem)(nil)

// Registry implements [Store].
func (m *Mem) Registry() state.Registry { return memRegistry{m} }

// Registrar implements [Store].
func (m *Mem) Registrar() Registrar { return memRegistrar{m} }

// Jobs implements [Store].
func (m *Mem) Jobs() engine.JobStore { return memJobs{m} }

// Pending implements [Store].
func (m *Mem) Pending() engine.PendingStore { return memPending{m} }

// MRU implements [Store].
func (m *Mem) MRU() mru.Store { return memMRU{m} }

// Begin implements [Store].
func (m *Mem) Begin(h uint64) error {
	switch {
	case m.closed:
		return ErrClosed
	case m.open:
		return fmt.Errorf("%w: block %d", ErrBatchOpen, m.height)
	case m.hasLast && h <= m.last:
		return fmt.Errorf("%w: %d ≤ %d", ErrHeightOrder, h, m.last)
	}
	m.open, m.height = true, h
	return nil
}

// Commit implements [Store].
func (m *Mem) Commit() error {
	if err := m.writable(); err != nil {
		return err
	}
	for id, r := range m.jobOverlay {
		var err error
		if m.jobs.Encoded(id) != nil {
			err = m.jobs.Update(r)
		} else {
			err = m.jobs.Insert(r)
		}
		if err != nil { // unreachable: the overlay checked both at write time
			return fmt.Errorf("store: commit job %x: %w", id, err)
		}
	}
	clear(m.jobOverlay)
	m.pendUndo = m.pendUndo[:0]
	m.mruUndo = m.mruUndo[:0]
	m.anchorUndo = m.anchorUndo[:0]
	m.regWritten = false
	m.open = false
	m.last, m.hasLast = m.height, true
	return nil
}

// Discard implements [Store]. Without an open batch it does nothing.
func (m *Mem) Discard() {
	if !m.open || m.closed {
		return
	}
	clear(m.jobOverlay)
	for i := len(m.pendUndo) - 1; i >= 0; i-- {
		u := m.pendUndo[i]
		if u.put {
			_ = m.pending.Delete(u.r) // the exact record Put stored
		} else {
			_ = m.pending.Put(u.r) // its job_id is free again: the Delete removed it
		}
	}
	m.pendUndo = m.pendUndo[:0]
	for i := len(m.mruUndo) - 1; i >= 0; i-- {
		u := m.mruUndo[i]
		if u.had {
			m.mruKV[u.key] = u.prev
			continue
		}
		delete(m.mruKV, u.key)
		if j, found := slices.BinarySearch(m.mruKeys, u.key); found {
			m.mruKeys = slices.Delete(m.mruKeys, j, j+1)
		}
	}
	m.mruUndo = m.mruUndo[:0]
	m.discardAnchors()
	if m.regWritten {
		m.reg.Rollback(m.height)
		m.regWritten = false
	}
	m.open = false
}

// LastCommitted implements [Store].
func (m *Mem) LastCommitted() (uint64, bool, error) {
	if m.closed {
		return 0, false, ErrClosed
	}
	return m.last, m.hasLast, nil
}

// LiveJobs implements [Store]. The slice is the caller's.
func (m *Mem) LiveJobs() ([][32]byte, error) {
	if m.closed {
		return nil, ErrClosed
	}
	live := slices.Clone(m.jobs.Live())
	for id, r := range m.jobOverlay {
		i, found := slices.BinarySearchFunc(live, id, cmpID)
		switch isLive := r.Status == engine.StatusPending || r.Status == engine.StatusAssigned; {
		case isLive && !found:
			live = slices.Insert(live, i, id)
		case !isLive && found:
			live = slices.Delete(live, i, i+1)
		}
	}
	return live, nil
}

// EncodedJob is the stored encoding of job id (the batch's write if it
// has one), nil if there is none or the store is closed. It is a fast
// path for digests over every live job; the bytes are read-only.
func (m *Mem) EncodedJob(id [32]byte) []byte {
	if m.closed {
		return nil
	}
	if r, ok := m.jobOverlay[id]; ok {
		return r.Encode()
	}
	return m.jobs.Encoded(id)
}

// MRURecords implements [Store]. The slice is the caller's.
func (m *Mem) MRURecords() ([]MRUEntry, error) {
	if m.closed {
		return nil, ErrClosed
	}
	out := make([]MRUEntry, 0, len(m.mruKeys))
	for _, k := range m.mruKeys {
		r, err := mru.DecodeRecord(m.mruKV[k])
		if err != nil {
			return nil, fmt.Errorf("mru_key %x: %w", k, err)
		}
		e := MRUEntry{Kind: mru.JobKind(k[len(k)-1]), Record: r}
		copy(e.Submitter[:], k[len(mru.KeyPrefix):])
		out = append(out, e)
	}
	return out, nil
}

// PendingRecords returns every live pending record, including the open
// batch's, in due-round key order (the state digest's pending part,
// docs/chainlog.md). The slice is the caller's.
func (m *Mem) PendingRecords() ([]engine.PendingSelectionV1, error) {
	if m.closed {
		return nil, ErrClosed
	}
	keys := m.pending.DueKeys()
	out := make([]engine.PendingSelectionV1, 0, len(keys))
	for _, k := range keys {
		var id [32]byte
		copy(id[:], k[len(k)-32:])
		r, ok, err := m.pending.Get(id)
		if err != nil || !ok {
			return nil, fmt.Errorf("%w: due index names job %x (%v)", engine.ErrNoLivePending, id, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Close implements [Store]: it drops an open batch. Closing twice is a
// no-op.
func (m *Mem) Close() error {
	if m.closed {
		return nil
	}
	m.Discard()
	m.closed = true
	return nil
}

// writable is the precondition of every write.
func (m *Mem) writable() error {
	switch {
	case m.closed:
		return ErrClosed
	case !m.open:
		return ErrNoBatch
	}
	return nil
}

func cmpID(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) }

func cloneJob(r engine.JobRecord) engine.JobRecord {
	r.Committee = slices.Clone(r.Committee)
	r.Delivered = slices.Clone(r.Delivered)
	r.TimedOut = slices.Clone(r.TimedOut)
	return r
}

// memRegistry is Mem's state.Registry.
type memRegistry struct{ m *Mem }

func (v memRegistry) At(h uint64) (state.RegistryView, error) {
	m := v.m
	switch {
	case m.closed:
		return nil, ErrClosed
	case m.open && h > m.height:
		return nil, fmt.Errorf("%w: %d is above the open block %d", state.ErrUnknownHeight, h, m.height)
	case !m.open && !m.hasLast:
		return nil, fmt.Errorf("%w: %d: no block committed", state.ErrUnknownHeight, h)
	case !m.open && h > m.last:
		return nil, fmt.Errorf("%w: %d is above the last committed block %d", state.ErrUnknownHeight, h, m.last)
	}
	return m.reg.At(h)
}

// memRegistrar is Mem's Registrar: writes at the batch height.
type memRegistrar struct{ m *Mem }

func (w memRegistrar) Register(r state.Runner) error {
	if err := w.m.writable(); err != nil {
		return err
	}
	if err := w.m.reg.Register(w.m.height, r); err != nil {
		return err
	}
	w.m.regWritten = true
	return nil
}

func (w memRegistrar) Update(r state.Runner) error {
	if err := w.m.writable(); err != nil {
		return err
	}
	if err := w.m.reg.Update(w.m.height, r); err != nil {
		return err
	}
	w.m.regWritten = true
	return nil
}

func (w memRegistrar) Latest(addr cip11.Address) (state.Runner, bool, error) {
	if w.m.closed {
		return state.Runner{}, false, ErrClosed
	}
	r, ok := w.m.reg.Latest(addr)
	return r, ok, nil
}

// memJobs is Mem's engine.JobStore: the batch's writes in an overlay over
// the committed MemJobStore.
type memJobs struct{ m *Mem }

func (s memJobs) Job(id [32]byte) (engine.JobRecord, bool, error) {
	if s.m.closed {
		return engine.JobRecord{}, false, ErrClosed
	}
	if r, ok := s.m.jobOverlay[id]; ok {
		return cloneJob(r), true, nil
	}
	return s.m.jobs.Job(id)
}

func (s memJobs) exists(id [32]byte) bool {
	if _, ok := s.m.jobOverlay[id]; ok {
		return true
	}
	return s.m.jobs.Encoded(id) != nil
}

func (s memJobs) Insert(r engine.JobRecord) error {
	if err := s.m.writable(); err != nil {
		return err
	}
	if s.exists(r.JobID) {
		return fmt.Errorf("%w: %x", engine.ErrDuplicateJob, r.JobID)
	}
	s.m.jobOverlay[r.JobID] = cloneJob(r)
	return nil
}

func (s memJobs) Update(r engine.JobRecord) error {
	if err := s.m.writable(); err != nil {
		return err
	}
	if !s.exists(r.JobID) {
		return fmt.Errorf("%w: %x", engine.ErrUnknownJob, r.JobID)
	}
	s.m.jobOverlay[r.JobID] = cloneJob(r)
	return nil
}

func (s memJobs) DueBefore(h uint64) ([][32]byte, error) {
	m := s.m
	if m.closed {
		return nil, ErrClosed
	}
	base, err := m.jobs.DueBefore(h)
	if err != nil || len(m.jobOverlay) == 0 {
		return base, err
	}
	type due struct {
		deadline uint64
		id       [32]byte
	}
	var out []due
	for _, id := range base {
		if _, ok := m.jobOverlay[id]; ok {
			continue // superseded by the batch
		}
		r, _, _ := m.jobs.Job(id)
		out = append(out, due{r.DeadlineBlock, id})
	}
	for id, r := range m.jobOverlay {
		if r.Status == engine.StatusAssigned && r.DeadlineBlock < h {
			out = append(out, due{r.DeadlineBlock, id})
		}
	}
	slices.SortFunc(out, func(a, b due) int {
		if a.deadline != b.deadline {
			if a.deadline < b.deadline {
				return -1
			}
			return 1
		}
		return cmpID(a.id, b.id)
	})
	ids := make([][32]byte, len(out))
	for i, d := range out {
		ids[i] = d.id
	}
	return ids, nil
}

// memPending is Mem's engine.PendingStore: writes go to the
// MemPendingStore and their inverses to the undo log.
type memPending struct{ m *Mem }

func (s memPending) Get(jobID [32]byte) (engine.PendingSelectionV1, bool, error) {
	if s.m.closed {
		return engine.PendingSelectionV1{}, false, ErrClosed
	}
	return s.m.pending.Get(jobID)
}

func (s memPending) Put(r engine.PendingSelectionV1) error {
	if err := s.m.writable(); err != nil {
		return err
	}
	if err := s.m.pending.Put(r); err != nil {
		return err
	}
	s.m.pendUndo = append(s.m.pendUndo, pendingUndo{put: true, r: r})
	return nil
}

// Delete removes the stored record of r.JobID (both keys, whatever the
// other fields of r say).
func (s memPending) Delete(r engine.PendingSelectionV1) error {
	if err := s.m.writable(); err != nil {
		return err
	}
	stored, ok, err := s.m.pending.Get(r.JobID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: job %x", engine.ErrNoLivePending, r.JobID)
	}
	if err := s.m.pending.Delete(stored); err != nil {
		return err
	}
	s.m.pendUndo = append(s.m.pendUndo, pendingUndo{r: stored})
	return nil
}

func (s memPending) DueAt(epoch, view uint64) ([]engine.PendingSelectionV1, error) {
	if s.m.closed {
		return nil, ErrClosed
	}
	return s.m.pending.DueAt(epoch, view)
}

func (s memPending) DueBefore(epoch, view uint64) ([]engine.PendingSelectionV1, error) {
	if s.m.closed {
		return nil, ErrClosed
	}
	return s.m.pending.DueBefore(epoch, view)
}

// memMRU is Mem's mru.Store: an mru.KVStore over the MemKV, with undo.
type memMRU struct{ m *Mem }

func (s memMRU) Get(submitter cip11.Address, kind mru.JobKind) (mru.Record, bool, error) {
	if s.m.closed {
		return mru.Record{}, false, ErrClosed
	}
	return mru.KVStore{KV: s.m.mruKV}.Get(submitter, kind)
}

func (s memMRU) Put(submitter cip11.Address, kind mru.JobKind, r mru.Record) error {
	m := s.m
	if err := m.writable(); err != nil {
		return err
	}
	k := mru.Key(submitter, kind)
	key := string(k[:])
	prev, had := m.mruKV[key] // MemKV.Set replaces the slice, so prev stays intact
	if err := (mru.KVStore{KV: m.mruKV}).Put(submitter, kind, r); err != nil {
		return err
	}
	m.mruUndo = append(m.mruUndo, mruUndo{key: key, prev: prev, had: had})
	if !had {
		i, _ := slices.BinarySearch(m.mruKeys, key)
		m.mruKeys = slices.Insert(m.mruKeys, i, key)
	}
	return nil
}
