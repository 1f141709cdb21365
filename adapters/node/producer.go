package node

import (
	"fmt"
	"math/rand/v2"

	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// Consensus is what block production decides for block h beyond its
// transactions (chain.Consensus).
type Consensus = chain.Consensus

// Producer is block production behind the node: the single-validator
// producer now, a BFT engine's proposer (CometBFT with the threshold seed
// in vote extensions) later. The node never assumes one validator beyond
// this interface.
type Producer interface {
	// Next decides block h's consensus context; parent is block h−1 (nil
	// for h = 1).
	Next(h uint64, parent *chainlog.Block) (Consensus, error)
}

// Solo is the single-validator producer (f = 0, finality immediate,
// §8.1): one view per block, except that with probability
// SkipPerMille/1000 a view is nullified and skipped (its seed still
// exists, §9.2); every round's seed is the 1-of-1 threshold signature of
// the validator's BLS key; block h executes with h−1 finalized.
type Solo struct {
	Key          seed.SecretKey
	Namespace    []byte
	Schedule     seed.FixedSchedule
	SkipPerMille uint32
	Rand         *rand.Rand // the skip draws (nil: no skips)
}

// Next implements Producer.
func (s *Solo) Next(h uint64, parent *chainlog.Block) (Consensus, error) {
	var c Consensus
	c.Seed = s.seed
	if parent == nil {
		c.Round = seed.Round{Epoch: 0, View: s.Schedule.FirstView}
		return c, nil
	}
	pr := seed.Round{Epoch: uint64(parent.Round.Epoch), View: uint64(parent.Round.View)}
	step := uint64(1)
	for s.Rand != nil && s.SkipPerMille > 0 && step < 4 && uint32(s.Rand.IntN(1000)) < s.SkipPerMille {
		step++ // advance_round over a nullified view (§9.2)
	}
	next, ok, err := s.Schedule.Advance(pr, step)
	if err != nil {
		return c, err
	}
	if !ok {
		return c, fmt.Errorf("node: round %v + %d is past the schedule's last known epoch", pr, step)
	}
	c.Round = next
	sig, _, err := s.seed(pr)
	if err != nil {
		return c, err
	}
	c.ParentBeacon = &chainlog.Beacon{Epoch: parent.Round.Epoch, View: parent.Round.View, Signature: chainlog.Signature(sig)}
	f := h - 1
	c.Finalized = &f
	return c, nil
}

func (s *Solo) seed(r seed.Round) (seed.Signature, bool, error) {
	sig, err := seed.SignSeed(s.Key, s.Namespace, r)
	return sig, err == nil, err
}

// ProduceBlock is the single-validator driver: it takes block Height()+1
// through the step API exactly as an engine's application does (the
// Producer decides the consensus context, the proposal draws from the
// core's own pool, then FinalizeBlock and CommitBlock; D32), so that the
// block is executed, logged and committed, and its pushes queued for the
// sender (§10.1: only after the block is committed). It returns once the
// block is committed; pushes go out after. One goroutine drives it (Run);
// it must not be called concurrently with itself.
func (v *Validator) ProduceBlock() error {
	if err := v.Err(); err != nil {
		return err
	}
	parent := v.LastBlock()
	h := uint64(1)
	if parent != nil {
		h = uint64(parent.Height) + 1
	}
	cs, err := v.prod.Next(h, parent)
	if err != nil {
		return err
	}
	pres, err := v.PresenceInput(h) // nil (PhaseOff): no runner known present (§7.2)
	if err != nil {
		return fmt.Errorf("presence input: %w", err)
	}
	p, err := v.ProposeBlock(cs, pres, nil)
	if err != nil {
		return err
	}
	if _, err := v.FinalizeBlock(p.Block, nil); err != nil {
		return err
	}
	_, err = v.CommitBlock()
	return err
}
