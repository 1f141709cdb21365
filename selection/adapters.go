package selection

import (
	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/state"
)

// BlockPresenceSource is the [PresenceSource] of §7.2: it applies the
// flag-scoped validity rules (presence.ResolveBlockPresence) to the block's
// PresenceInputV1 against registry(H−1) and resolves the set to addresses
// once per block (§17 PresenceView).
type BlockPresenceSource struct {
	Params cip11.Params
	// ModeA derives PresenceInput(H) = { runner | presence_proven_until ≥ H }
	// from parent state when Mode A is effective (§8.3). Nil means no runner
	// is proven present, so an effective Mode A under-fills (§9.2 point d).
	ModeA func(h uint64, parent state.RegistryView) (func(cip11.Address) bool, error)
}

// NewPresenceSource returns the §7.2 presence source for params p.
func NewPresenceSource(p cip11.Params) *BlockPresenceSource { return &BlockPresenceSource{Params: p} }

// Resolve implements [PresenceSource].
func (s *BlockPresenceSource) Resolve(h uint64, field []byte, parent state.RegistryView, modeAEffective bool) (live, shadow func(cip11.Address) bool, err error) {
	bp, err := presence.ResolveBlockPresence(s.Params, modeAEffective, field, len(parent.ActiveRunners()))
	if err != nil {
		return nil, nil, err
	}
	switch bp.Source {
	case presence.SourceModeAState:
		if s.ModeA == nil {
			return nil, nil, nil
		}
		live, err = s.ModeA(h, parent)
		return live, nil, err
	case presence.SourceBlockField:
		v, err := presence.NewView(bp.Present, parent)
		if err != nil {
			return nil, nil, err
		}
		return v.IsPresent, nil, nil
	}
	if bp.HasShadow {
		v, err := presence.NewView(bp.Shadow, parent)
		if err != nil {
			return nil, nil, err
		}
		return nil, v.IsPresent, nil
	}
	return nil, nil, nil
}

// MRUReader is the [MRUSource] over package mru: lookup_mru with the §9.4
// activation gate and the §9.3 TTL.
type MRUReader struct {
	Reader mru.Reader
	Params cip11.Params
}

// NewMRUSource returns the §9.3 MRU source over r.
func NewMRUSource(r mru.Reader, p cip11.Params) *MRUReader { return &MRUReader{Reader: r, Params: p} }

// LookupMRU implements [MRUSource].
func (m *MRUReader) LookupMRU(submitter cip11.Address, kind mru.JobKind, h uint64) (cip11.Address, bool, error) {
	rec, ok, err := mru.Lookup(m.Reader, m.Params, submitter, kind, h)
	return rec.Runner, ok, err
}
