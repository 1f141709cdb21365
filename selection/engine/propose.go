package engine

import (
	"github.com/cip11/cip11/seed"
)

// SeedSource returns the verified threshold seed signature of a round, if
// the proposer has observed it (§9.2 "execution-readable seed exposure":
// notarization, finalization or nullification).
type SeedSource func(r seed.Round) (sig seed.Signature, ok bool, err error)

// ProposeConsumedSeeds builds the ConsumedSeedsV1 field a proposer commits
// in a block proposed in round: one entry for every distinct seed round
// before round that has at least one live pending record whose submission
// block is finalized (§9.2 condition 1, finalized as in [Block.Finalized]),
// and whose seed the proposer has observed. Rounds whose seed is not
// available simply stay pending (§9.2: withholding delays, never
// invalidates). The result is the canonical encoding, sorted by round.
func ProposeConsumedSeeds(pending PendingStore, round seed.Round, finalized *uint64, seeds SeedSource) ([]byte, error) {
	var entries []seed.ConsumedSeed
	if finalized != nil {
		recs, err := pending.DueBefore(round.Epoch, round.View)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			rs := seed.Round{Epoch: r.SeedEpoch, View: r.SeedView}
			if r.SubmittedAt > *finalized || (len(entries) > 0 && entries[len(entries)-1].Round == rs) {
				continue
			}
			sig, ok, err := seeds(rs)
			if err != nil {
				return nil, err
			}
			if ok {
				entries = append(entries, seed.ConsumedSeed{Round: rs, Signature: sig})
			}
		}
	}
	cs, err := seed.BuildConsumedSeeds(entries)
	if err != nil {
		return nil, err
	}
	return cs.Encode()
}
