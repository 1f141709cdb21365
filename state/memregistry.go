package state

import (
	"fmt"
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
	versions map[cip11.Address][]runnerVersion
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
		versions: make(map[cip11.Address][]runnerVersion),
		configs:  []configVersion{{0, cfg}},
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
	if _, ok := m.versions[r.Address]; ok {
		return fmt.Errorf("%w: %s", ErrAlreadyRegistered, r.Address)
	}
	if err := m.advance(h); err != nil {
		return err
	}
	m.order = append(m.order, r.Address)
	m.orderAt = append(m.orderAt, h)
	m.versions[r.Address] = []runnerVersion{{h, r}}
	return nil
}

// Update stores a new record for an already registered runner at height h
// (heartbeat, health, stake or reputation change). It never touches the
// append-order list: that is the §7.2 index-basis rule.
func (m *MemRegistry) Update(h uint64, r Runner) error {
	vs, ok := m.versions[r.Address]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotRegistered, r.Address)
	}
	if err := m.advance(h); err != nil {
		return err
	}
	if last := &vs[len(vs)-1]; last.height == h {
		last.runner = r
		return nil
	}
	m.versions[r.Address] = append(vs, runnerVersion{h, r})
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
	vs, ok := m.versions[addr]
	if !ok {
		return Runner{}, false
	}
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
	vs := v.m.versions[addr]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].height > v.h }) - 1
	if i < 0 {
		return Runner{}, false
	}
	return vs[i].runner, true
}
