package seed

import (
	"cmp"
	"fmt"
	"math/bits"
)

// Round is a consensus round, commonware's Seed.round = (epoch, view) (§3.2
// "Round(e, v)"). A block height is not a round. Rounds are totally ordered
// by (Epoch, View).
type Round struct {
	Epoch uint64
	View  uint64
}

// Compare orders rounds by (Epoch, View) (§3.2, §9.2 "sorted ascending by
// (seed_epoch, seed_view)"): -1 if r < o, 0 if equal, +1 if r > o.
func (r Round) Compare(o Round) int {
	if c := cmp.Compare(r.Epoch, o.Epoch); c != 0 {
		return c
	}
	return cmp.Compare(r.View, o.View)
}

// Less reports whether r precedes o in (Epoch, View) order (§3.2).
func (r Round) Less(o Round) bool { return r.Compare(o) < 0 }

// String formats the round as "(epoch, view)" (§3.2).
func (r Round) String() string { return fmt.Sprintf("(%d, %d)", r.Epoch, r.View) }

// AdvanceRound is the consensus-owned advance_round(round, k) of §9.2
// (DECISIONS D13): it returns the round k views after r in total Round order,
// carrying across epoch boundaries by the consensus epoch-transition rules.
// mappable is false when the target cannot be mapped yet because the epoch
// schedule is not known; the pending selection then stays pending and the
// caller MUST NOT substitute another round. Execution never computes
// view + k itself.
type AdvanceRound func(r Round, k uint64) (next Round, mappable bool, err error)

// SeedRound computes r_seed = advance_round(r_submit, K) (§9.2) through the
// injected advance and checks that it moved forward when K > 0, so a broken
// integration cannot make a job consume the seed of its own proposal round
// (commit-then-reveal).
func SeedRound(advance AdvanceRound, rSubmit Round, k uint64) (Round, bool, error) {
	next, ok, err := advance(rSubmit, k)
	if err != nil || !ok {
		return Round{}, ok, err
	}
	if k > 0 && !rSubmit.Less(next) {
		return Round{}, false, fmt.Errorf("%w: advance_round(%v, %d) = %v", ErrAdvanceRoundRegressed, rSubmit, k, next)
	}
	return next, true, nil
}

// FixedSchedule is a TEST / DEVNET epoch schedule, not consensus: every epoch
// has exactly ViewsPerEpoch views numbered FirstView … FirstView+ViewsPerEpoch−1,
// and epochs after LastKnownEpoch are "not mappable yet". Real chains inject
// the consensus engine's advance_round (§9.2, DECISIONS D13).
type FixedSchedule struct {
	ViewsPerEpoch  uint64 // > 0
	FirstView      uint64 // view number of each epoch's first view
	LastKnownEpoch uint64 // last epoch whose schedule is known
}

// Advance implements [AdvanceRound] for the fixed devnet schedule (§9.2):
// it moves k views forward, carrying into later epochs.
func (s FixedSchedule) Advance(r Round, k uint64) (Round, bool, error) {
	if s.ViewsPerEpoch == 0 || s.FirstView > ^uint64(0)-(s.ViewsPerEpoch-1) {
		return Round{}, false, fmt.Errorf("%w: %d views per epoch from view %d", ErrInvalidSchedule, s.ViewsPerEpoch, s.FirstView)
	}
	if r.View < s.FirstView || r.View-s.FirstView >= s.ViewsPerEpoch {
		return Round{}, false, fmt.Errorf("%w: %v", ErrRoundOutsideSchedule, r)
	}
	lo, hi := bits.Add64(r.View-s.FirstView, k, 0)
	if hi >= s.ViewsPerEpoch {
		return Round{}, false, fmt.Errorf("%w: %v + %d views", ErrRoundOverflow, r, k)
	}
	carry, view := bits.Div64(hi, lo, s.ViewsPerEpoch)
	epoch, over := bits.Add64(r.Epoch, carry, 0)
	if over != 0 {
		return Round{}, false, fmt.Errorf("%w: %v + %d views", ErrRoundOverflow, r, k)
	}
	next := Round{Epoch: epoch, View: s.FirstView + view}
	return next, epoch <= s.LastKnownEpoch, nil
}

// HeightSchedule is advance_round on a chain whose view is the block height
// and whose threshold-key epoch changes at activation heights (DECISIONS
// D30, the CometBFT integration): epoch e holds the views Activations[e] …
// Activations[e+1]−1, and the last epoch holds every view from its
// activation on. advance_round(r, k) walks k heights forward and changes
// epoch at an activation height. The epoch of a view after KnownThrough is
// not final yet (a reconfiguration may still be activated before it), so a
// target there is "not mappable yet" (§9.2): the pending selection waits.
// Like [FixedSchedule] it is a devnet/integration schedule; a production
// chain injects its consensus engine's advance_round (D13).
type HeightSchedule struct {
	Activations  []uint64 // strictly ascending, at least one; [0] is the first view
	KnownThrough uint64   // the last view whose epoch is final
}

// check validates the schedule.
func (s HeightSchedule) check() error {
	if len(s.Activations) == 0 {
		return fmt.Errorf("%w: height schedule without activations", ErrInvalidSchedule)
	}
	for i := 1; i < len(s.Activations); i++ {
		if s.Activations[i] <= s.Activations[i-1] {
			return fmt.Errorf("%w: activation %d at view %d does not follow %d", ErrInvalidSchedule, i, s.Activations[i], s.Activations[i-1])
		}
	}
	if last := s.Activations[len(s.Activations)-1]; s.KnownThrough < last {
		return fmt.Errorf("%w: known through view %d, before the last activation %d", ErrInvalidSchedule, s.KnownThrough, last)
	}
	return nil
}

// EpochAt is the epoch active at view (a block height, D30). A view before
// the first activation belongs to no epoch: [ErrRoundOutsideSchedule].
func (s HeightSchedule) EpochAt(view uint64) (uint64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if view < s.Activations[0] {
		return 0, fmt.Errorf("%w: view %d precedes the first activation %d", ErrRoundOutsideSchedule, view, s.Activations[0])
	}
	e := uint64(0)
	for i := 1; i < len(s.Activations) && s.Activations[i] <= view; i++ {
		e = uint64(i)
	}
	return e, nil
}

// Advance implements [AdvanceRound] for the height schedule (§9.2, D30). The
// round r must be a round of the schedule (its epoch the one active at its
// view, its view within KnownThrough).
func (s HeightSchedule) Advance(r Round, k uint64) (Round, bool, error) {
	e, err := s.EpochAt(r.View)
	if err != nil {
		return Round{}, false, err
	}
	if e != r.Epoch || r.View > s.KnownThrough {
		return Round{}, false, fmt.Errorf("%w: %v (view %d is in epoch %d, schedule known through %d)", ErrRoundOutsideSchedule, r, r.View, e, s.KnownThrough)
	}
	view, over := bits.Add64(r.View, k, 0)
	if over != 0 {
		return Round{}, false, fmt.Errorf("%w: %v + %d views", ErrRoundOverflow, r, k)
	}
	if view > s.KnownThrough {
		return Round{}, false, nil
	}
	e, err = s.EpochAt(view)
	if err != nil {
		return Round{}, false, err
	}
	return Round{Epoch: e, View: view}, true, nil
}
