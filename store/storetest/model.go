package storetest

import (
	"bytes"
	"cmp"
	"maps"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
)

// The reference model: plain maps, whole copies at every commit, history as
// a list of (height, registry) pairs. Deliberately naive.

type regState struct {
	order []cip11.Address
	recs  map[cip11.Address]state.Runner
}

func (r regState) clone() regState {
	return regState{order: slices.Clone(r.order), recs: maps.Clone(r.recs)}
}

type mruK struct {
	sub  cip11.Address
	kind mru.JobKind
}

type snapshot struct {
	reg  regState
	jobs map[[32]byte]engine.JobRecord
	pend map[[32]byte]engine.PendingSelectionV1
	mru  map[mruK]mru.Record
}

func newSnapshot() snapshot {
	return snapshot{
		reg:  regState{recs: map[cip11.Address]state.Runner{}},
		jobs: map[[32]byte]engine.JobRecord{},
		pend: map[[32]byte]engine.PendingSelectionV1{},
		mru:  map[mruK]mru.Record{},
	}
}

func (s snapshot) clone() snapshot {
	jobs := make(map[[32]byte]engine.JobRecord, len(s.jobs))
	for id, r := range s.jobs {
		jobs[id] = cloneJob(r)
	}
	return snapshot{reg: s.reg.clone(), jobs: jobs, pend: maps.Clone(s.pend), mru: maps.Clone(s.mru)}
}

type histEntry struct {
	h   uint64
	reg regState
}

type model struct {
	hasLast   bool
	last      uint64
	committed snapshot
	cur       snapshot // the batch's state; equals committed outside a batch
	open      bool
	h         uint64 // batch height
	hist      []histEntry
}

func newModel() *model {
	return &model{committed: newSnapshot(), cur: newSnapshot()}
}

func (m *model) begin(h uint64) { m.open, m.h = true, h }

func (m *model) commit() {
	m.committed = m.cur.clone()
	m.hist = append(m.hist, histEntry{m.h, m.cur.reg.clone()})
	m.last, m.hasLast, m.open = m.h, true, false
}

func (m *model) discard() {
	m.cur = m.committed.clone()
	m.open = false
}

// top is the highest height a registry view may be asked for, and whether
// there is one.
func (m *model) top() (uint64, bool) {
	if m.open {
		return m.h, true
	}
	return m.last, m.hasLast
}

// regAt is the registry as stored at the end of h.
func (m *model) regAt(h uint64) regState {
	if m.open && h == m.h {
		return m.cur.reg
	}
	i := lastAtOrBelow(m.hist, h)
	if i < 0 {
		return newSnapshot().reg
	}
	return m.hist[i].reg
}

// lastAtOrBelow returns the index of the last entry at or below h, or -1.
func lastAtOrBelow(hist []histEntry, h uint64) int {
	i, found := slices.BinarySearchFunc(hist, h, func(e histEntry, h uint64) int { return cmp.Compare(e.h, h) })
	if found {
		return i
	}
	return i - 1
}

// required is the lowest height a store must still serve: the last
// committed one (or the batch's) and the §9.2 pending pass's read point of
// every live pending record (block-S state = end of S−1).
func (m *model) required() uint64 {
	lb, _ := m.top()
	if m.hasLast {
		lb = min(lb, m.last)
	}
	for _, p := range m.cur.pend {
		lb = min(lb, max(p.SubmittedAt, 1)-1)
	}
	return lb
}

func (m *model) liveJobs() [][32]byte {
	var out [][32]byte
	for id, r := range m.cur.jobs {
		if r.Status == engine.StatusPending || r.Status == engine.StatusAssigned {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, cmpID)
	return out
}

func (m *model) jobsDueBefore(h uint64) [][32]byte {
	var rs []engine.JobRecord
	for _, r := range m.cur.jobs {
		if r.Status == engine.StatusAssigned && r.DeadlineBlock < h {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b engine.JobRecord) int {
		return cmp.Or(cmp.Compare(a.DeadlineBlock, b.DeadlineBlock), cmpID(a.JobID, b.JobID))
	})
	out := make([][32]byte, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.JobID)
	}
	return out
}

// cmpDue is due-round key order: (seed_epoch, seed_view, submitted_at, job_id).
func cmpDue(a, b engine.PendingSelectionV1) int {
	return cmp.Or(cmp.Compare(a.SeedEpoch, b.SeedEpoch), cmp.Compare(a.SeedView, b.SeedView),
		cmp.Compare(a.SubmittedAt, b.SubmittedAt), cmpID(a.JobID, b.JobID))
}

func (m *model) pending(keep func(engine.PendingSelectionV1) bool) []engine.PendingSelectionV1 {
	var out []engine.PendingSelectionV1
	for _, p := range m.cur.pend {
		if keep(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, cmpDue)
	return out
}

func (m *model) dueAt(e, v uint64) []engine.PendingSelectionV1 {
	return m.pending(func(p engine.PendingSelectionV1) bool { return p.SeedEpoch == e && p.SeedView == v })
}

func (m *model) dueBefore(e, v uint64) []engine.PendingSelectionV1 {
	return m.pending(func(p engine.PendingSelectionV1) bool {
		return p.SeedEpoch < e || p.SeedEpoch == e && p.SeedView < v
	})
}

func (m *model) mruRecords() []mruEntry {
	var out []mruEntry
	for k, r := range m.cur.mru {
		out = append(out, mruEntry{k, r})
	}
	slices.SortFunc(out, func(a, b mruEntry) int {
		return cmp.Or(bytes.Compare(a.k.sub[:], b.k.sub[:]), cmp.Compare(a.k.kind, b.k.kind))
	})
	return out
}

type mruEntry struct {
	k mruK
	r mru.Record
}

func cmpID(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) }

func cloneJob(r engine.JobRecord) engine.JobRecord {
	r.Committee = slices.Clone(r.Committee)
	r.Delivered = slices.Clone(r.Delivered)
	r.TimedOut = slices.Clone(r.TimedOut)
	return r
}
