package cometbft

import (
	"errors"
	"testing"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/chainlog"
)

// TestScheduleInsideOverlapRefused (§5.4, SPEC-NOTES C9): snapshot
// retirement is derived from the successor's ValidatorSetActivated plus
// OVERLAP_BLOCKS, so epoch E−1 stays admissible until activation(E) +
// OVERLAP_BLOCKS; a genesis schedule whose next activation falls inside
// that window would cut E−1 off early. Every entry point refuses it, as
// the in-band rule does (C11(b)): NewNetwork's plan check and the genesis
// file's Validate (what LoadGenesis and NewValidator run).
func TestScheduleInsideOverlapRefused(t *testing.T) {
	p := node.DefaultGenesisParams()
	p.OverlapBlocks = 6
	plan := func(add, remove uint64) NetworkOptions {
		o := NetworkOptions{Validators: 4, Seed: 3, Params: &p}
		o.Members, o.Epochs = AddThenRemove(4, add, remove)
		return o
	}
	for name, o := range map[string]NetworkOptions{
		"epoch 2 inside epoch 1's overlap (10, 14; OVERLAP_BLOCKS 6)": plan(10, 14),
		"epoch 2 one block short (10, 15)":                            plan(10, 15),
		"epoch 1 inside epoch 0's overlap (1, 6)":                     plan(6, 20),
	} {
		if _, err := NewNetwork(o); !errors.Is(err, node.ErrActivationSpacing) {
			t.Errorf("%s: NewNetwork: %v, want node.ErrActivationSpacing", name, err)
		}
	}
	// the boundary is allowed: activation(E+1) = activation(E) + OVERLAP_BLOCKS
	nw, err := NewNetwork(plan(7, 13))
	if err != nil {
		t.Fatalf("activations 7, 13 with OVERLAP_BLOCKS 6: %v", err)
	}
	// a genesis file edited to a closer schedule is refused where it is read
	g := *nw.Homes[0].Genesis
	g.Epochs = append([]node.GenesisEpoch(nil), g.Epochs...)
	g.Schedule.Activations = append([]chainlog.U64(nil), g.Schedule.Activations...)
	g.Epochs[1].Activation, g.Schedule.Activations[2] = 12, 12
	if err := g.Validate(); !errors.Is(err, node.ErrActivationSpacing) || !errors.Is(err, node.ErrGenesis) {
		t.Fatalf("Genesis.Validate of epoch 2 at 12, inside epoch 1's overlap 7 + 6: %v, want node.ErrGenesis and node.ErrActivationSpacing", err)
	}
}
