package selection

import (
	"fmt"

	"github.com/cip11/cip11"
)

// Branch names the three arms of the §9.2 normative present-first draw.
type Branch uint8

const (
	// BranchPresentFirst: Mode B present-first membership — M == 1 in any
	// topology, or single-validator M > 1. present, fallback = partition(…).
	BranchPresentFirst Branch = iota
	// BranchFullSet: multi-validator Mode B with M > 1 (the §7.3
	// membership-steering bound): membership is drawn over the full eligible set.
	BranchFullSet
	// BranchModeA: Mode A effective (flag and the §8.4 K_HARD_MIN guard):
	// present = eligible ∩ PresenceInput(H), fallback = [] (hard exclude).
	BranchModeA
)

// String returns the vector name of the branch.
func (b Branch) String() string {
	switch b {
	case BranchPresentFirst:
		return "present_first"
	case BranchFullSet:
		return "full_set"
	case BranchModeA:
		return "mode_a"
	}
	return fmt.Sprintf("Branch(%d)", uint8(b))
}

// ParseBranch maps a vector branch name to a Branch.
func ParseBranch(s string) (Branch, error) {
	for b := BranchPresentFirst; b <= BranchModeA; b++ {
		if b.String() == s {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownBranch, s)
}

// ChooseBranch evaluates the §9.2 branch condition in its normative order:
// Mode A first (only when effective, §8.4 guard), then the multi-validator
// M > 1 membership-steering bound (§7.3), else present-first.
func ChooseBranch(modeAEffective, multiValidator bool, committeeSize uint32) Branch {
	switch {
	case modeAEffective:
		return BranchModeA
	case multiValidator && committeeSize > 1:
		return BranchFullSet
	}
	return BranchPresentFirst
}

// pool is one §9.2 draw pool: runners and their paired base weights, plus
// the exact sum of those weights. Weights never leave their runner's slot
// except together with it (swap_remove), which is the §9.2 pairing rule.
type pool struct {
	addrs   []cip11.Address
	weights []cip11.U128
	sum     sum192
}

func (p *pool) grow(n int) {
	p.addrs = make([]cip11.Address, 0, n)
	p.weights = make([]cip11.U128, 0, n)
}

func (p *pool) push(a cip11.Address, w cip11.U128) {
	p.addrs = append(p.addrs, a)
	p.weights = append(p.weights, w)
	p.sum.add(w)
}

func (p *pool) clone() pool {
	return pool{
		addrs:   append([]cip11.Address(nil), p.addrs...),
		weights: append([]cip11.U128(nil), p.weights...),
		sum:     p.sum,
	}
}

// draw is weighted_draw over the pool with, optionally, the weight at mruIdx
// replaced by mruW (the §9.3 iteration-0 multiplier). It is WeightedDraw
// with the total maintained incrementally instead of re-summed.
func (p *pool) draw(seed cip11.Hash, i uint64, mruIdx int, mruW cip11.U128) (int, bool) {
	s := p.sum
	if mruIdx >= 0 {
		s.sub(p.weights[mruIdx])
		s.add(mruW)
	}
	total := s.clamp()
	if total.IsZero() {
		return 0, false
	}
	ticket := total.ModOf64(drawTicket(seed, i))
	if ticket.Hi == 0 {
		return p.walkSmall(ticket.Lo, mruIdx, mruW)
	}
	for j, w := range p.weights {
		if j == mruIdx {
			w = mruW
		}
		if ticket.Less(w) {
			return j, true
		}
		ticket = ticket.Sub(w)
	}
	return 0, false
}

// walkSmall is step 6 for a ticket below 2^64 (always the case, since the
// ticket is a u64 reduced modulo the total): any weight with a non-zero high
// word ends the walk.
func (p *pool) walkSmall(ticket uint64, mruIdx int, mruW cip11.U128) (int, bool) {
	for j, w := range p.weights {
		if j == mruIdx {
			w = mruW
		}
		if w.Hi != 0 || ticket < w.Lo {
			return j, true
		}
		ticket -= w.Lo
	}
	return 0, false
}

func (p *pool) swapRemove(j int) {
	last := len(p.addrs) - 1
	p.sum.sub(p.weights[j])
	p.addrs[j], p.weights[j] = p.addrs[last], p.weights[last]
	p.addrs, p.weights = p.addrs[:last], p.weights[:last]
}

func (p *pool) index(a cip11.Address) int {
	for j := range p.addrs {
		if p.addrs[j] == a {
			return j
		}
	}
	return -1
}

// Pools is the eligible list of one selection split into the §9.2 present
// and fallback pools for a branch. Build it once per (snapshot, presence,
// branch) and draw any number of committees from it: Draw never mutates it.
type Pools struct {
	present, fallback pool
}

// Eligible is one eligible candidate as the committee loop sees it.
type Eligible struct {
	Address    cip11.Address
	BaseWeight cip11.U128
	Present    bool // marked present by PresenceInput(H)
}

// NewPools builds the pools for branch from eligible (in eligible order,
// DECISIONS D14), applying the §9.2 stable partition: each runner goes to
// present iff marked present, else to fallback, never re-sorted. For
// BranchFullSet presence is ignored (present = eligible); for BranchModeA
// non-present runners are dropped (fallback = []).
func NewPools(branch Branch, eligible []Eligible) *Pools {
	p := &Pools{}
	for _, e := range eligible {
		switch {
		case branch == BranchFullSet || e.Present:
			p.present.push(e.Address, e.BaseWeight)
		case branch == BranchPresentFirst:
			p.fallback.push(e.Address, e.BaseWeight)
		}
	}
	return p
}

// Pools splits the snapshot's candidates into the pools for branch with
// presence isPresent (nil: nobody present), exactly as
// NewPools(branch, s.Eligible(isPresent)) but without the intermediate list.
func (s *Snapshot) Pools(branch Branch, isPresent func(cip11.Address) bool) *Pools {
	p := &Pools{}
	flags := make([]bool, len(s.Leaves))
	np := 0
	for i := range s.Leaves {
		flags[i] = branch == BranchFullSet || (isPresent != nil && isPresent(s.Leaves[i].Address))
		if flags[i] {
			np++
		}
	}
	p.present.grow(np)
	if branch == BranchPresentFirst {
		p.fallback.grow(len(s.Leaves) - np)
	}
	for i := range s.Leaves {
		l := &s.Leaves[i]
		switch {
		case flags[i]:
			p.present.push(l.Address, l.BaseWeight)
		case branch == BranchPresentFirst:
			p.fallback.push(l.Address, l.BaseWeight)
		}
	}
	return p
}

// PresentLen and FallbackLen report the pool sizes.
func (p *Pools) PresentLen() int { return len(p.present.addrs) }

// FallbackLen reports the fallback pool size.
func (p *Pools) FallbackLen() int { return len(p.fallback.addrs) }

// MRU is the §9.3 iteration-0 bias: the MRU runner (already filtered by TTL
// via lookup_mru) and MRU_WEIGHT_MULTIPLIER.
type MRU struct {
	Address    cip11.Address
	Multiplier uint64
}

// Draw runs the §9.2 committee loop for committee size m with the fixed
// seed: a single global counter i; the active pool is present while it is
// non-empty, then fallback; MRU applies once, at global i == 0, to whichever
// pool is active then, as base.saturating_mul(multiplier); each drawn runner
// leaves its pool by swap_remove; the loop stops early when the pool is
// empty or weighted_draw returns None (under-fill, §11.2).
func (p *Pools) Draw(seed cip11.Hash, m uint32, mru *MRU) []cip11.Address {
	if m == 1 {
		return p.drawOne(seed, mru)
	}
	return p.draw(seed, 0, m, mru)
}

// DrawFrom runs the committee loop for m more runners with the global
// counter starting at first, without any MRU bias: the draw of a timeout
// re-selection that continues a job's counter (DECISIONS D26).
func (p *Pools) DrawFrom(seed cip11.Hash, first uint64, m uint32) []cip11.Address {
	return p.draw(seed, first, m, nil)
}

func (p *Pools) draw(seed cip11.Hash, first uint64, m uint32, mru *MRU) []cip11.Address {
	if m == 0 {
		return nil
	}
	present, fallback := p.present.clone(), p.fallback.clone()
	// m comes from the job; never allocate beyond what the pools can fill.
	selected := make([]cip11.Address, 0, min(uint64(m), uint64(len(present.addrs)+len(fallback.addrs))))
	for i := first; i-first < uint64(m); i++ {
		active := &present
		if len(present.addrs) == 0 {
			active = &fallback
		}
		if len(active.addrs) == 0 {
			break
		}
		mruIdx, mruW := mruAt(active, i, mru)
		j, ok := active.draw(seed, i, mruIdx, mruW)
		if !ok {
			break
		}
		selected = append(selected, active.addrs[j])
		active.swapRemove(j)
	}
	return selected
}

// drawOne is Draw for m == 1 without copying the pools: one ticket, one walk.
func (p *Pools) drawOne(seed cip11.Hash, mru *MRU) []cip11.Address {
	active := &p.present
	if len(active.addrs) == 0 {
		active = &p.fallback
	}
	if len(active.addrs) == 0 {
		return nil
	}
	mruIdx, mruW := mruAt(active, 0, mru)
	j, ok := active.draw(seed, 0, mruIdx, mruW)
	if !ok {
		return nil
	}
	return []cip11.Address{active.addrs[j]}
}

func mruAt(active *pool, i uint64, mru *MRU) (int, cip11.U128) {
	if i != 0 || mru == nil {
		return -1, cip11.U128{}
	}
	j := active.index(mru.Address)
	if j < 0 {
		return -1, cip11.U128{}
	}
	return j, active.weights[j].MulSat64(mru.Multiplier)
}
