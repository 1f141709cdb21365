package blockheader

import (
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
