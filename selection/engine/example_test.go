package engine_test

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
)

// Example executes one block with an M == 1 job over in-memory state: a
// single-validator chain with three registered runners, none present, so
// the draw falls back to the whole eligible set (§7.3 fail-open).
func Example() {
	p := cip11.DefaultParams()
	p.PresentFirstEnabled = true
	ns := []byte("example-chain")
	sk := seed.DeriveSecretKey([]byte("example threshold key"))
	pk := sk.PublicKey()
	v, _ := seed.NewVerifier(pk[:], ns)
	sig, _ := seed.SignSeed(sk, ns, seed.Round{})
	genesis := seed.Beacon{Round: seed.Round{}, Signature: sig}

	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	for i := byte(1); i <= 3; i++ {
		_ = reg.Register(1, state.Runner{Address: cip11.Address{19: i}, LastHeartbeat: 1,
			Stake: cip11.U128From64(1_000_000), ReputationX1e9: 1_000_000_000})
	}
	sched := seed.FixedSchedule{ViewsPerEpoch: 1000, LastKnownEpoch: 1}
	e, err := engine.New(engine.Config{
		Params: p, GenesisBeacon: &genesis,
		Registry: reg, Validators: engine.FixedValidators(1),
		Jobs: engine.NewMemJobStore(), Pending: engine.NewMemPendingStore(),
		Keys: seed.MemoryThresholdKeys{0: v}, Advance: sched.Advance,
		MRU: mru.NewMemStore(), Presence: presence.NewPresenceSource(p),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	empty, _ := presence.NewSet(3, nil)
	consumed, _ := seed.ConsumedSeedsV1(nil).Encode()
	res, err := e.ExecuteBlock(engine.Block{
		Height: 2, ProposalRound: seed.Round{View: 2},
		PresenceInput: presence.Encode(empty), ConsumedSeeds: consumed,
		Txs: []engine.Tx{engine.Submit{Job: engine.Job{JobID: [32]byte{1}, CommitteeSize: 1, TimeoutBlocks: 50}}},
	})
	if err != nil { // the block is invalid: discard its writes
		fmt.Println(err)
		return
	}
	a := res.Assignments[0]
	fmt.Println(a.Branch, len(a.Committee), a.DeadlineBlock)
	// Output: present_first 1 52
}
