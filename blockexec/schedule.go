package blockexec

import (
	"fmt"

	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// heightSchedule is the D30 height schedule a chain-log schedule with
// activations describes (SPEC-NOTES C4).
func heightSchedule(s chainlog.Schedule) seed.HeightSchedule {
	hs := seed.HeightSchedule{KnownThrough: uint64(s.KnownThrough), Activations: make([]uint64, 0, len(s.Activations))}
	for _, a := range s.Activations {
		hs.Activations = append(hs.Activations, uint64(a))
	}
	return hs
}

// checkRounds applies blockheader.CheckSchedule to block b at height h on
// a chain whose schedule is the D30 height schedule (including the
// committed reconfigurations' activations): the proposal round must be
// Round(epoch_at(h), h) and a parent beacon the seed of
// Round(epoch_at(h−1), h−1) (§9.2 "R.round equals the expected absolute
// seed round", D30, D31). The engine then verifies the beacon under its
// epoch's key, which this makes the key of the epoch the schedule has
// active at h−1, never a retired one. A chain with a fixed schedule keeps
// its rules (no check here).
func (x *Executor) checkRounds(h uint64, b *chainlog.Block) error {
	if !x.hdr.Schedule.Height() {
		return nil
	}
	hd := blockheader.Header{Round: seed.Round{Epoch: uint64(b.Round.Epoch), View: uint64(b.Round.View)}, ParentBeacon: beaconFrom(b.ParentBeacon)}
	if err := blockheader.CheckSchedule(&hd, h, heightSchedule(x.hdr.Schedule)); err != nil {
		return fmt.Errorf("block %d rounds: %w", h, err)
	}
	return nil
}
