package blockheader

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11/seed"
)

// Check applies the placement rules of a header at block height height
// that need no chain state (DECISIONS D22, D30–D32; SPEC-NOTES H4), in
// field order:
//
//  1. Version is [Version] ([ErrHeaderVersion]); height ≥ 1 ([ErrZeroHeight]);
//  2. Round.View == height: on CometBFT the view is the height (D30)
//     ([ErrRoundView]);
//  3. a parent beacon iff height > 1 ([ErrBeaconMissing],
//     [ErrBeaconUnexpected]), of the parent's round: view height−1 and an
//     epoch not after Round.Epoch ([ErrBeaconRound]);
//  4. Finalized == height−1 (0, none, at height 1) ([ErrFinalized]);
//  5. ConsumedSeeds ascending (seed sentinels), every round before Round:
//     a seed of a round not yet ended has no signature yet ([ErrSeedRound]).
//
// Verifying the beacon and the consumed seeds against the threshold key,
// pairing the seeds with the records the block processes (§9.2) and
// decoding Presence against registry(H−1) (§7.2) are the application's.
func Check(h *Header, height uint64) error {
	if h == nil {
		return ErrNilHeader
	}
	if h.Version != Version {
		return fmt.Errorf("%w: %d", ErrHeaderVersion, h.Version)
	}
	if height == 0 {
		return ErrZeroHeight
	}
	if h.Round.View != height {
		return fmt.Errorf("%w: round %v at height %d", ErrRoundView, h.Round, height)
	}
	if err := checkBeacon(h.ParentBeacon, h.Round, height); err != nil {
		return err
	}
	if h.Finalized != height-1 {
		return fmt.Errorf("%w: finalized %d at height %d", ErrFinalized, h.Finalized, height)
	}
	if err := h.ConsumedSeeds.Check(); err != nil {
		return fmt.Errorf("blockheader: consumed_seeds: %w", err)
	}
	if n := len(h.ConsumedSeeds); n > 0 && !h.ConsumedSeeds[n-1].Round.Less(h.Round) {
		return fmt.Errorf("%w: seed round %v, proposal round %v", ErrSeedRound, h.ConsumedSeeds[n-1].Round, h.Round)
	}
	return nil
}

func checkBeacon(b *seed.Beacon, r seed.Round, height uint64) error {
	switch {
	case height == 1 && b != nil:
		return fmt.Errorf("%w: round %v", ErrBeaconUnexpected, b.Round)
	case height == 1:
		return nil
	case b == nil:
		return fmt.Errorf("%w: height %d", ErrBeaconMissing, height)
	case b.Round.View != height-1 || b.Round.Epoch > r.Epoch:
		return fmt.Errorf("%w: beacon round %v, proposal round %v", ErrBeaconRound, b.Round, r)
	}
	return nil
}

// CheckSchedule applies the rules of a header at block height height that
// need the chain's height schedule s (seed.HeightSchedule: epoch_at(v) is
// the epoch active at view v; DECISIONS D30, SPEC-NOTES C4, H4). §9.2
// requires that R.round equals the expected absolute seed round: on
// CometBFT block h's parent beacon is the seed of exactly
// Round(epoch_at(h−1), h−1) (D31) and its proposal round is
// Round(epoch_at(h), h) (D30). In order:
//
//  1. a nil header ([ErrNilHeader]); height ≥ 1 ([ErrZeroHeight]);
//  2. Round.View == height ([ErrRoundView]);
//  3. s is a valid schedule (seed.ErrInvalidSchedule) that maps height: at
//     or after its first activation and not after KnownThrough
//     ([ErrHeightUnscheduled]);
//  4. Round.Epoch == epoch_at(height) ([ErrRoundEpoch]);
//  5. when the header carries a parent beacon: its view is height−1
//     ([ErrBeaconRound]), s maps height−1 ([ErrHeightUnscheduled]) and its
//     epoch is epoch_at(height−1) ([ErrBeaconEpoch]).
//
// Whether a beacon must be present is [Check]'s rule (a beacon iff height >
// 1), which callers apply first; CheckSchedule checks the beacon a header
// carries. After it passes, the epoch the beacon names is the one the
// schedule has active at height−1, so verifying the beacon under "its
// epoch's" key is verifying it under the key the schedule says (§9.2: the
// active consensus threshold public key) — a retired epoch's members, who
// keep their shares, cannot offer a second beacon for the same view.
// A chain with a fixed (non-height) schedule has no epoch_at and does not
// apply this rule.
func CheckSchedule(h *Header, height uint64, s seed.HeightSchedule) error {
	if h == nil {
		return ErrNilHeader
	}
	if height == 0 {
		return ErrZeroHeight
	}
	if h.Round.View != height {
		return fmt.Errorf("%w: round %v at height %d", ErrRoundView, h.Round, height)
	}
	e, err := epochAt(s, height)
	if err != nil {
		return err
	}
	if h.Round.Epoch != e {
		return fmt.Errorf("%w: round %v, epoch %d is active at height %d", ErrRoundEpoch, h.Round, e, height)
	}
	b := h.ParentBeacon
	if b == nil {
		return nil
	}
	if b.Round.View != height-1 {
		return fmt.Errorf("%w: beacon round %v at height %d", ErrBeaconRound, b.Round, height)
	}
	pe, err := epochAt(s, height-1)
	if err != nil {
		return fmt.Errorf("parent beacon: %w", err)
	}
	if b.Round.Epoch != pe {
		return fmt.Errorf("%w: beacon round %v, the parent round is %v", ErrBeaconEpoch, b.Round, seed.Round{Epoch: pe, View: height - 1})
	}
	return nil
}

// epochAt is s.EpochAt(view) for a view s can map: a view before the first
// activation or after KnownThrough is [ErrHeightUnscheduled]; an invalid
// schedule wraps seed.ErrInvalidSchedule.
func epochAt(s seed.HeightSchedule, view uint64) (uint64, error) {
	e, err := s.EpochAt(view)
	switch {
	case errors.Is(err, seed.ErrInvalidSchedule):
		return 0, fmt.Errorf("blockheader: %w", err)
	case err != nil:
		return 0, fmt.Errorf("%w: view %d precedes the first activation %d", ErrHeightUnscheduled, view, s.Activations[0])
	case view > s.KnownThrough:
		return 0, fmt.Errorf("%w: view %d is after known_through %d", ErrHeightUnscheduled, view, s.KnownThrough)
	}
	return e, nil
}
