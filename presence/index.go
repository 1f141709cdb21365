package presence

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
)

// ErrRegistryMismatch: a Set's index domain is not the size of the registry
// view it is resolved against — the caller used a view other than the §7.2
// parent-block (H−1) registry the set was decoded for.
var ErrRegistryMismatch = errors.New("presence: set domain does not match the registry view")

// View is PresenceInput(H) resolved to runner addresses once per block — the
// immutable per-block PresenceView of §17 — so that selection's stable
// partition (§9.2) asks "is this eligible runner present?" in O(1). The zero
// View has no present runner (the §7.3 fail-open empty set).
type View struct {
	set     Set
	present map[cip11.Address]struct{}
}

// NewView resolves s against parent, the Runner Registry as stored at the end
// of block H−1 (§7.2 registry index basis, §8.5): index i is
// parent.ActiveRunners()[i]. It costs one map entry per present runner.
func NewView(s Set, parent state.RegistryView) (View, error) {
	order := parent.ActiveRunners()
	if len(order) != s.n {
		return View{}, fmt.Errorf("%w: set over %d indices, registry at height %d has %d runners",
			ErrRegistryMismatch, s.n, parent.Height(), len(order))
	}
	v := View{set: s, present: make(map[cip11.Address]struct{}, s.count)}
	for _, i := range s.Indices() {
		v.present[order[i]] = struct{}{}
	}
	return v, nil
}

// IsPresent reports whether addr is marked present (§7.3 partition). A runner
// not in registry(H−1) — e.g. one registered in block H (§8.5) — never is.
func (v View) IsPresent(addr cip11.Address) bool {
	_, ok := v.present[addr]
	return ok
}

// Len returns the number of present runners in PresenceInput(H) (§7.2).
func (v View) Len() int { return len(v.present) }

// Set returns the underlying §7.2 registry-index set.
func (v View) Set() Set { return v.set }

// Addresses returns the present runners' addresses in registry-index order
// (§7.2 index basis: parent is the H−1 registry view).
func Addresses(s Set, parent state.RegistryView) ([]cip11.Address, error) {
	order := parent.ActiveRunners()
	if len(order) != s.n {
		return nil, fmt.Errorf("%w: set over %d indices, registry has %d runners", ErrRegistryMismatch, s.n, len(order))
	}
	out := make([]cip11.Address, 0, s.count)
	for _, i := range s.Indices() {
		out = append(out, order[i])
	}
	return out, nil
}

// FromAddresses builds the proposer's present set for block H from its local
// view of present runners (§8.1–§8.2). Indices come from parent, the registry
// as of H−1 (§7.2, §8.5): a present address not registered there — a runner
// registered in block H, or an unknown address — is dropped, since it cannot
// appear in PresenceInput(H). Order and duplicates in present do not matter.
func FromAddresses(parent state.RegistryView, present []cip11.Address) Set {
	want := make(map[cip11.Address]struct{}, len(present))
	for _, a := range present {
		want[a] = struct{}{}
	}
	return FromFunc(parent, func(a cip11.Address) bool {
		_, ok := want[a]
		return ok
	})
}

// FromFunc is [FromAddresses] (§7.2, §8.5) for a caller that already has a membership test
// (e.g. its local presence table): index i is present iff
// isPresent(parent.ActiveRunners()[i]).
func FromFunc(parent state.RegistryView, isPresent func(cip11.Address) bool) Set {
	order := parent.ActiveRunners()
	s := Set{words: make([]uint64, (len(order)+63)/64), n: len(order)}
	for i, a := range order {
		if isPresent(a) {
			s.words[i/64] |= 1 << (i % 64)
			s.count++
		}
	}
	return s
}
