package presence

import (
	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
)

// BlockPresenceSource is the [PresenceSource] of §7.2: it applies the
// flag-scoped validity rules (ResolveBlockPresence) to the block's
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

// Resolve returns the membership test the block at height h selects with:
// live is the set present-first selection uses; shadow is non-nil only for
// CIP11_PRESENCE_SHADOW_ENABLED telemetry while present-first is off. An
// error makes the block invalid (§7.2 rule 2).
func (s *BlockPresenceSource) Resolve(h uint64, field []byte, parent state.RegistryView, modeAEffective bool) (live, shadow func(cip11.Address) bool, err error) {
	bp, err := ResolveBlockPresence(s.Params, modeAEffective, field, len(parent.ActiveRunners()))
	if err != nil {
		return nil, nil, err
	}
	switch bp.Source {
	case SourceModeAState:
		if s.ModeA == nil {
			return nil, nil, nil
		}
		live, err = s.ModeA(h, parent)
		return live, nil, err
	case SourceBlockField:
		v, err := NewView(bp.Present, parent)
		if err != nil {
			return nil, nil, err
		}
		return v.IsPresent, nil, nil
	}
	if bp.HasShadow {
		v, err := NewView(bp.Shadow, parent)
		if err != nil {
			return nil, nil, err
		}
		return nil, v.IsPresent, nil
	}
	return nil, nil, nil
}
