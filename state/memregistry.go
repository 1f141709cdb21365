package state

import (
	"bytes"
	"fmt"
	"iter"
	"slices"
	"sort"

	"github.com/cip11/cip11"
)

// MemRegistry is an in-memory [Registry] that keeps full history cheaply:
// the append-order list grows only at its end, and each runner keeps a list
// of versions. Writes must come in non-decreasing height order; a write at
// height h is visible in At(h) and later. It is not safe for concurrent use.
type MemRegistry struct {
	order    []cip11.Address
	orderAt  []uint64 // orderAt[i] = height at which order[i] was appended
	byAddr   []int    // registry indices in ascending address order
	latest   []Runner // newest record of every runner, in byAddr order
	index    map[cip11.Address]int
	versions [][]runnerVersion // by registry index
	configs  []configVersion
	last     uint64
}

type runnerVersion struct {
	height uint64
	runner Runner
}

type configVersion struct {
	height uint64
	cfg    ReputationConfig
}

// NewMemRegistry returns an empty registry whose reputation configuration
// from height 0 on is cfg.
func NewMemRegistry(cfg ReputationConfig) *MemRegistry {
	return &MemRegistry{
		index:   make(map[cip11.Address]int),
		configs: []configVersion{{0, cfg}},
	}
}

func (m *MemRegistry) advance(h uint64) error {
	if h < m.last {
		return fmt.Errorf("%w: %d < %d", ErrHeightRegression, h, m.last)
	}
	m.last = h
	return nil
}

// Register appends r.Address to ACTIVE_RUNNERS_KEY at height h, giving it the
// next registry index (§7.2), and stores its record.
func (m *MemRegistry) Register(h uint64, r Runner) error {
	if _, ok := m.index[r.Address]; ok {
		return fmt.Errorf("%w: %s", ErrAlreadyRegistered, r.Address)
	}
	if err := m.advance(h); err != nil {
		return err
	}
	i := len(m.order)
	m.index[r.Address] = i
	m.order = append(m.order, r.Address)
	m.orderAt = append(m.orderAt, h)
	m.versions = append(m.versions, []runnerVersion{{h, r}})
	at, _ := slices.BinarySearchFunc(m.byAddr, r.Address, func(j int, a cip11.Address) int { return bytes.Compare(m.order[j][:], a[:]) })
	m.byAddr = slices.Insert(m.byAddr, at, i)
	m.latest = slices.Insert(m.latest, at, r)
	return nil
}

// Update stores a new record for an already registered runner at height h
// (heartbeat, health, stake or reputation change). It never touches the
// append-order list: that is the §7.2 index-basis rule.
func (m *MemRegistry) Update(h uint64, r Runner) error {
	i, ok := m.index[r.Address]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotRegistered, r.Address)
	}
	if err := m.advance(h); err != nil {
		return err
	}
	at, _ := slices.BinarySearchFunc(m.byAddr, r.Address, func(j int, a cip11.Address) int { return bytes.Compare(m.order[j][:], a[:]) })
	m.latest[at] = r
	vs := m.versions[i]
	if last := &vs[len(vs)-1]; last.height == h {
		last.runner = r
		return nil
	}
	m.versions[i] = append(vs, runnerVersion{h, r})
	return nil
}

// SetReputationConfig changes ReputationConfig from height h on.
func (m *MemRegistry) SetReputationConfig(h uint64, cfg ReputationConfig) error {
	if err := m.advance(h); err != nil {
		return err
	}
	if last := &m.configs[len(m.configs)-1]; last.height == h {
		last.cfg = cfg
		return nil
	}
	m.configs = append(m.configs, configVersion{h, cfg})
	return nil
}

// Latest returns the newest record of a runner, for building the next write.
func (m *MemRegistry) Latest(addr cip11.Address) (Runner, bool) {
	i, ok := m.index[addr]
	if !ok {
		return Runner{}, false
	}
	vs := m.versions[i]
	return vs[len(vs)-1].runner, true
}

// At implements [Registry]. Every height is retained.
func (m *MemRegistry) At(h uint64) (RegistryView, error) {
	n := sort.Search(len(m.orderAt), func(i int) bool { return m.orderAt[i] > h })
	c := sort.Search(len(m.configs), func(i int) bool { return m.configs[i].height > h }) - 1
	return memView{m: m, h: h, n: n, cfg: m.configs[c].cfg}, nil
}

type memView struct {
	m   *MemRegistry
	h   uint64
	n   int
	cfg ReputationConfig
}

func (v memView) Height() uint64                     { return v.h }
func (v memView) ActiveRunners() []cip11.Address     { return v.m.order[:v.n:v.n] }
func (v memView) ReputationConfig() ReputationConfig { return v.cfg }

func (v memView) Runner(addr cip11.Address) (Runner, bool) {
	i, ok := v.m.index[addr]
	if !ok || i >= v.n {
		return Runner{}, false
	}
	return v.at(i)
}

// at is the record of registry index i as of the view's height.
func (v memView) at(i int) (Runner, bool) {
	vs := v.m.versions[i]
	if n := len(vs); vs[n-1].height <= v.h {
		return vs[n-1].runner, true // the common case: a view of the newest state
	}
	j := sort.Search(len(vs), func(j int) bool { return vs[j].height > v.h }) - 1
	if j < 0 {
		return Runner{}, false
	}
	return vs[j].runner, true
}

// ByAddress implements [SortedView].
func (v memView) ByAddress() iter.Seq[Runner] {
	return func(yield func(Runner) bool) {
		if v.h >= v.m.last && v.n == len(v.m.order) { // nothing written after h: the newest records
			for _, r := range v.m.latest {
				if !yield(r) {
					return
				}
			}
			return
		}
		for _, i := range v.m.byAddr {
			if i >= v.n {
				continue
			}
			if r, ok := v.at(i); ok && !yield(r) {
				return
			}
		}
	}
}

// Rollback drops every write made at height h or above — registrations,
// record versions and reputation-configuration changes — as if they had
// never been made, so the next write may again be at any height ≥ h. It is
// the discard of a block batch at height h (package store). Views of
// heights below h are unaffected; views of heights ≥ h taken before the
// call are no longer meaningful. The configuration stored at height 0 is
// always kept. It costs O(runners).
func (m *MemRegistry) Rollback(h uint64) {
	if h > m.last {
		return // nothing was written at h or above
	}
	n := sort.Search(len(m.orderAt), func(i int) bool { return m.orderAt[i] >= h })
	for _, a := range m.order[n:] {
		delete(m.index, a)
	}
	// Clip so that later appends reallocate instead of overwriting entries
	// that older views may still slice.
	m.order = slices.Clip(m.order[:n])
	m.orderAt = slices.Clip(m.orderAt[:n])
	m.versions = slices.Clip(m.versions[:n])
	for i, vs := range m.versions {
		j := sort.Search(len(vs), func(j int) bool { return vs[j].height >= h })
		if j < len(vs) {
			m.versions[i] = vs[:j:j] // j ≥ 1: the registration itself is below h
		}
	}
	m.byAddr = slices.DeleteFunc(m.byAddr, func(i int) bool { return i >= n })
	m.latest = make([]Runner, len(m.byAddr))
	for k, i := range m.byAddr {
		vs := m.versions[i]
		m.latest[k] = vs[len(vs)-1].runner
	}
	c := sort.Search(len(m.configs), func(i int) bool { return m.configs[i].height >= h })
	m.configs = slices.Clip(m.configs[:max(c, 1)])
	// The last written height is that of the newest write that survived.
	m.last = m.configs[len(m.configs)-1].height
	for _, vs := range m.versions {
		m.last = max(m.last, vs[len(vs)-1].height)
	}
}
