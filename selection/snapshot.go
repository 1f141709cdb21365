package selection

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
	"github.com/cip11/cip11/state"
)

// Filter is one non-floor stage of the §9.1 candidate filter chain (filters
// 0, 0.5 and 2–9.5 are owned by CIP-2, CIP-9, CIP-23 and the live
// dispatcher). The node injects them already bound to the job being
// selected; CIP-11 itself codifies only Filter 1, the floor.
type Filter interface {
	Admit(r state.Runner) bool
}

// FilterFunc adapts a function to [Filter].
type FilterFunc func(r state.Runner) bool

// Admit implements [Filter].
func (f FilterFunc) Admit(r state.Runner) bool { return f(r) }

// Floor is §9.1 Filter 1, the eligibility floor of §7.1:
// HealthStatus::Healthy AND current_block_height − last_heartbeat ≤
// HEARTBEAT_TIMEOUT_BLOCKS (the subtraction saturates at 0 for a heartbeat
// recorded at or after the current height).
func Floor(r state.Runner, currentHeight, heartbeatTimeoutBlocks uint64) bool {
	if r.Health != state.Healthy {
		return false
	}
	return r.LastHeartbeat >= currentHeight || currentHeight-r.LastHeartbeat <= heartbeatTimeoutBlocks
}

// Snapshot is the ordered block-T selection snapshot of §9.2: every runner
// that passes the filter chain at T, ascending by address (DECISIONS D14),
// with the weight inputs the candidates_snapshot_root commits.
type Snapshot struct {
	T      uint64
	Leaves []merkle.Leaf
	root   *cip11.Hash // memoised candidates_snapshot_root
	cfg    state.ReputationConfig
}

// BuildSnapshot evaluates the §9.1 chain over the registry view that block T
// selects from (see SPEC-NOTES: the state at the start of block T, i.e. the
// view stored at the end of T−1), with current_block_height = T for the
// floor, and computes each survivor's §9.3 base weight from the same view's
// reputation snapshot and ReputationConfig_at(T) (§9.2 point e).
func BuildSnapshot(view state.RegistryView, t uint64, p cip11.Params, filters ...Filter) (*Snapshot, error) {
	return BuildSnapshotFrom(view, t, p, nil, filters...)
}

// BuildSnapshotFrom is [BuildSnapshot] reusing the base weights of prev, an
// earlier snapshot (nil for none): a runner whose effective stake and
// reputation equal its leaf in prev under the same ReputationConfig keeps
// that leaf's weight instead of recomputing the isqrt. The result is
// identical to BuildSnapshot's; prev only saves work.
func BuildSnapshotFrom(view state.RegistryView, t uint64, p cip11.Params, prev *Snapshot, filters ...Filter) (*Snapshot, error) {
	cfg := view.ReputationConfig()
	s := &Snapshot{T: t, cfg: cfg, Leaves: make([]merkle.Leaf, 0, len(view.ActiveRunners()))}
	var reuse []merkle.Leaf
	if prev != nil && prev.cfg == cfg {
		reuse = prev.Leaves
	}
	add := func(r state.Runner) error {
		if !Floor(r, t, p.HeartbeatTimeoutBlocks) || !admitAll(filters, r) {
			return nil
		}
		stake := r.EffectiveStake()
		w, ok := reusedWeight(&reuse, r.Address, stake, r.ReputationX1e9)
		if !ok {
			var err error
			if w, err = BaseWeight(stake, r.ReputationX1e9, cfg.Normalizer, cfg.WMinFloorX1e6); err != nil {
				return fmt.Errorf("snapshot at %d: %w", t, err)
			}
		}
		s.Leaves = append(s.Leaves, merkle.Leaf{Address: r.Address, EffectiveStake: stake, ReputationX1e9: r.ReputationX1e9, BaseWeight: w})
		return nil
	}
	if sv, ok := view.(state.SortedView); ok {
		for r := range sv.ByAddress() {
			if err := add(r); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	for _, addr := range view.ActiveRunners() {
		r, ok := view.Runner(addr)
		if !ok {
			continue
		}
		if err := add(r); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(s.Leaves, func(a, b merkle.Leaf) int { return bytes.Compare(a.Address[:], b.Address[:]) })
	return s, nil
}

// reusedWeight looks addr up in the address-sorted leaves, advancing past
// smaller addresses (callers ask in ascending order; out-of-order asks
// just miss), and returns its weight if the weight inputs are unchanged.
func reusedWeight(leaves *[]merkle.Leaf, addr cip11.Address, stake cip11.U128, rep uint64) (cip11.U128, bool) {
	l := *leaves
	for len(l) > 0 && bytes.Compare(l[0].Address[:], addr[:]) < 0 {
		l = l[1:]
	}
	*leaves = l
	if len(l) == 0 || l[0].Address != addr || l[0].EffectiveStake != stake || l[0].ReputationX1e9 != rep {
		return cip11.U128{}, false
	}
	return l[0].BaseWeight, true
}

func admitAll(filters []Filter, r state.Runner) bool {
	for _, f := range filters {
		if !f.Admit(r) {
			return false
		}
	}
	return true
}

// Root is the §9.2 candidates_snapshot_root of the snapshot, computed on
// first use and remembered (a snapshot is immutable once built).
func (s *Snapshot) Root() cip11.Hash { return s.RootBy(merkle.Root) }

// RootBy is [Snapshot.Root] computed, on first use, by root, which must
// equal merkle.Root (a caller may supply one that hashes on several cores).
func (s *Snapshot) RootBy(root func([]merkle.Leaf) cip11.Hash) cip11.Hash {
	if s.root == nil {
		r := root(s.Leaves)
		s.root = &r
	}
	return *s.root
}

// Eligible pairs each snapshot candidate with its presence bit for the
// committee loop, keeping weights paired with their runners (§9.2 point e).
func (s *Snapshot) Eligible(isPresent func(cip11.Address) bool) []Eligible {
	out := make([]Eligible, len(s.Leaves))
	for i, l := range s.Leaves {
		out[i] = Eligible{Address: l.Address, BaseWeight: l.BaseWeight, Present: isPresent != nil && isPresent(l.Address)}
	}
	return out
}
