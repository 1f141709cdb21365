package blockexec_test

import (
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// epochSecret is epoch e's group secret in the schedule tests (its public
// key is groupKey(e)).
func epochSecret(e byte) seed.SecretKey { return seed.DeriveSecretKey([]byte{'g', e}) }

// TestHeightScheduleRounds (§9.2 "R.round equals the expected absolute seed
// round", D30, D31): on a chain whose header has a height schedule — epoch
// 0 from height 1, epoch 1 from height 6 — the executor accepts exactly the
// blocks whose proposal round is Round(epoch_at(h), h) and whose parent
// beacon is the seed of Round(epoch_at(h−1), h−1). A beacon of Round(0, 6)
// validly signed with retired epoch 0's key at block 7, a round of the
// wrong epoch either way, or a round or beacon of another view is refused
// (a replay of such a log stops there), and a refused block leaves the
// state as it was.
func TestHeightScheduleRounds(t *testing.T) {
	const act = 6
	ns := []byte("cip11-test")
	h := chainlog.Header{Format: chainlog.FormatName, Version: chainlog.Version, ChainID: "schedule",
		Generator: "blockexec TestHeightScheduleRounds", Params: cip11.DefaultParams(), Namespace: ns,
		ThresholdKeys: []chainlog.EpochKey{{Epoch: 0, PublicKey: groupKey(0)}, {Epoch: 1, PublicKey: groupKey(1)}},
		Schedule:      chainlog.Schedule{Activations: []chainlog.U64{1, act}, KnownThrough: 1 << 40},
		Validators:    []chainlog.ValidatorSet{{ActivationHeight: 0, Participants: 4}, {ActivationHeight: act, Participants: 5}},
		Reputation:    chainlog.ReputationConfig{Normalizer: 1_000_000_000, WMinFloorX1e6: 1}}
	x, err := blockexec.New(h, blockexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	noSeeds, err := seed.ConsumedSeedsV1{}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	epochAt := func(v uint64) uint64 {
		if v >= act {
			return 1
		}
		return 0
	}
	beacon := func(e, v uint64) *chainlog.Beacon {
		s, err := seed.SignSeed(epochSecret(byte(e)), ns, seed.Round{Epoch: e, View: v})
		if err != nil {
			t.Fatal(err)
		}
		return &chainlog.Beacon{Epoch: chainlog.U64(e), View: chainlog.U64(v), Signature: chainlog.Signature(s)}
	}
	// blk is block height with round (re, rv) and the seed of (be, bv) signed
	// under epoch be's key as its parent beacon.
	blk := func(height, re, rv, be, bv uint64) *chainlog.Block {
		b := &chainlog.Block{Height: chainlog.U64(height), Round: chainlog.Round{Epoch: chainlog.U64(re), View: chainlog.U64(rv)},
			ConsumedSeeds: noSeeds}
		if height > 1 {
			b.ParentBeacon = beacon(be, bv)
			f := chainlog.U64(height - 1)
			b.Finalized = &f
		}
		return b
	}
	valid := func(height uint64) *chainlog.Block {
		return blk(height, epochAt(height), height, epochAt(height-1), height-1)
	}
	refuse := func(name string, b *chainlog.Block, want error) {
		t.Helper()
		before, _ := x.LastCommitted()
		_, err := x.Execute(b)
		if err == nil {
			x.Discard()
			t.Errorf("%s: accepted", name)
			return
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
		if last, _ := x.LastCommitted(); last != before {
			t.Errorf("%s: the refused block moved the chain to %d", name, last)
		}
	}
	for i := uint64(1); i <= 3; i++ {
		if _, err := x.Step(valid(i)); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	refuse("round of the next epoch before its activation", blk(4, 1, 4, 0, 3), blockheader.ErrRoundEpoch)
	refuse("round view not the height", blk(4, 0, 5, 0, 3), blockheader.ErrRoundView)
	refuse("beacon of another view (h−2)", blk(4, 0, 4, 0, 2), blockheader.ErrBeaconRound)
	for i := uint64(4); i <= 5; i++ {
		if _, err := x.Step(valid(i)); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	// Height 6 activates epoch 1: its round is Round(1, 6), its beacon the
	// seed of Round(0, 5).
	refuse("round of the retired epoch at the activation height", blk(act, 0, act, 0, act-1), blockheader.ErrRoundEpoch)
	refuse("beacon of the next epoch before its activation", blk(act, 1, act, 1, act-1), blockheader.ErrBeaconEpoch)
	if _, err := x.Step(valid(act)); err != nil {
		t.Fatalf("block %d: %v", act, err)
	}
	// Height 7: the parent round is Round(1, 6). Round(0, 6), validly
	// signed with epoch 0's retired key, is a second beacon the old
	// members could offer.
	refuse("stale-epoch beacon after the activation", blk(act+1, 1, act+1, 0, act), blockheader.ErrBeaconEpoch)
	refuse("round of the retired epoch after the activation", blk(act+1, 0, act+1, 0, act), blockheader.ErrRoundEpoch)
	if _, err := x.Step(valid(act + 1)); err != nil {
		t.Fatalf("block %d: %v", act+1, err)
	}
	if last, _ := x.LastCommitted(); last != act+1 {
		t.Fatalf("last committed %d", last)
	}
}

// TestHeightScheduleHorizon: a height after the schedule's known_through
// has no final epoch, so a block there is refused
// (blockheader.ErrHeightUnscheduled) rather than executed under a guessed
// one (§9.2, D30).
func TestHeightScheduleHorizon(t *testing.T) {
	ns := []byte("cip11-test")
	h := chainlog.Header{Format: chainlog.FormatName, Version: chainlog.Version, ChainID: "horizon",
		Generator: "blockexec TestHeightScheduleHorizon", Params: cip11.DefaultParams(), Namespace: ns,
		ThresholdKeys: []chainlog.EpochKey{{Epoch: 0, PublicKey: groupKey(0)}},
		Schedule:      chainlog.Schedule{Activations: []chainlog.U64{1}, KnownThrough: 2},
		Validators:    []chainlog.ValidatorSet{{ActivationHeight: 0, Participants: 4}},
		Reputation:    chainlog.ReputationConfig{Normalizer: 1_000_000_000, WMinFloorX1e6: 1}}
	x, err := blockexec.New(h, blockexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	noSeeds, err := seed.ConsumedSeedsV1{}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for v := uint64(1); v <= 3; v++ {
		b := &chainlog.Block{Height: chainlog.U64(v), Round: chainlog.Round{Epoch: 0, View: chainlog.U64(v)}, ConsumedSeeds: noSeeds}
		if v > 1 {
			s, err := seed.SignSeed(epochSecret(0), ns, seed.Round{Epoch: 0, View: v - 1})
			if err != nil {
				t.Fatal(err)
			}
			b.ParentBeacon = &chainlog.Beacon{View: chainlog.U64(v - 1), Signature: chainlog.Signature(s)}
		}
		_, err := x.Step(b)
		switch {
		case v <= 2 && err != nil:
			t.Fatalf("block %d: %v", v, err)
		case v == 3 && !errors.Is(err, blockheader.ErrHeightUnscheduled):
			t.Fatalf("block 3 past known_through 2: %v, want ErrHeightUnscheduled", err)
		}
	}
}
