package selection

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
)

var testNS = []byte("cowboy-test")

type harness struct {
	t       testing.TB
	e       *Engine
	reg     *state.MemRegistry
	pending *MemPendingStore
	fin     *FinalizedUpTo
	sk      seed.SecretKey
	addrs   []cip11.Address
}

func runnerAddr(i int) cip11.Address {
	var a cip11.Address
	binary.BigEndian.PutUint32(a[:4], uint32(i)*2654435761) // scatter: registration order ≠ address order
	binary.BigEndian.PutUint32(a[16:], uint32(i))
	return a
}

// newHarness registers n runners at height 1 with distinct stakes.
func newHarness(t testing.TB, n int, p cip11.Params) *harness {
	h := &harness{t: t, reg: state.NewMemRegistry(state.DefaultReputationConfig()),
		pending: NewMemPendingStore(), fin: &FinalizedUpTo{}}
	h.sk = seed.DeriveSecretKey([]byte("harness"))
	keys := NewMemThresholdKeys(testNS)
	pk := h.sk.PublicKey()
	for epoch := uint64(0); epoch < 4; epoch++ {
		if err := keys.Set(epoch, pk[:]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		a := runnerAddr(i)
		h.addrs = append(h.addrs, a)
		r := state.Runner{Address: a, LastHeartbeat: 1, Stake: cip11.U128From64(uint64(1000 + i)), ReputationX1e9: 1_000_000_000}
		if err := h.reg.Register(1, r); err != nil {
			t.Fatal(err)
		}
	}
	genesis := h.beacon(seed.Round{})
	sched := seed.FixedSchedule{ViewsPerEpoch: 1000, LastKnownEpoch: 3}
	h.e = &Engine{
		Config:   Config{Params: p, GenesisBeacon: &genesis},
		Registry: h.reg, Jobs: NewMemJobStore(), Pending: h.pending, Finality: h.fin,
		Keys: keys, Advance: sched.Advance,
		MRU:      NewMRUSource(mru.NewMemStore(), p),
		Presence: NewPresenceSource(p),
	}
	return h
}

func (h *harness) beacon(r seed.Round) seed.Beacon {
	sig, err := seed.SignSeed(h.sk, testNS, r)
	if err != nil {
		h.t.Fatal(err)
	}
	return seed.Beacon{Round: r, Signature: sig}
}

func (h *harness) consumed(rounds ...seed.Round) []byte {
	var cs []seed.ConsumedSeed
	for _, r := range rounds {
		cs = append(cs, seed.ConsumedSeed(h.beacon(r)))
	}
	b, err := seed.ConsumedSeedsV1(cs).Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// presenceOf encodes the present set {indices} over registry(H−1).
func (h *harness) presenceOf(indices ...int) []byte {
	s, err := presence.NewSet(len(h.addrs), indices)
	if err != nil {
		h.t.Fatal(err)
	}
	return presence.Encode(s)
}

func job(id byte, m uint32) Job {
	var j Job
	j.JobID[0] = id
	j.Submitter = addr(0xee)
	j.Kind = mru.JobKind(0)
	j.CommitteeSize = m
	j.TimeoutBlocks = 50
	return j
}

func activeParams() cip11.Params {
	p := cip11.DefaultParams()
	p.PresentFirstEnabled = true
	return p
}

// TestImmediatePresentFirst: M == 1 is selected in block S from R_{S−1};
// with exactly one present runner that runner is chosen (§7.3).
func TestImmediatePresentFirst(t *testing.T) {
	h := newHarness(t, 50, activeParams())
	parent := h.beacon(seed.Round{Epoch: 0, View: 1})
	res, err := h.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2}, ParentBeacon: &parent,
		PresenceInput: h.presenceOf(17), ConsumedSeeds: h.consumed(), Submits: []Job{job(1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Assignments) != 1 {
		t.Fatalf("assignments %d", len(res.Assignments))
	}
	a := res.Assignments[0]
	if !slices.Equal(a.Committee, []cip11.Address{h.addrs[17]}) || a.Mode != seed.ModeImmediate ||
		a.AssignmentHeight != 2 || a.DeadlineBlock != 52 || a.Branch != BranchPresentFirst {
		t.Fatalf("assignment %+v", a)
	}
	want, _ := seed.SelectionSeedV3(seed.ModeImmediate, parent.CanonicalSeedBytes(), a.JobID, 2)
	if a.Seed != want {
		t.Fatal("seed is not the v3 mode-0 seed of R_{S-1}")
	}
}

// TestPendingLifecycle: M > 1 writes a record in S, stays pending until S is
// finalized and its exact seed is committed, then is assigned and deleted.
func TestPendingLifecycle(t *testing.T) {
	h := newHarness(t, 50, activeParams())
	rSeed := seed.Round{Epoch: 0, View: 5} // advance_round((0,2), 3)
	res, err := h.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: h.presenceOf(),
		ConsumedSeeds: h.consumed(), Submits: []Job{job(9, 3)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Assignments) != 0 || len(res.PendingWritten) != 1 {
		t.Fatalf("block S must only write the pending record: %+v", res)
	}
	rec := res.PendingWritten[0]
	if rec.SeedEpoch != 0 || rec.SeedView != 5 || rec.SubmittedAt != 2 || rec.CommitteeSize != 3 || rec.SeedDelayViews != 3 {
		t.Fatalf("record %+v", rec)
	}
	// Not finalized yet: committing the seed consumes nothing ⇒ block invalid.
	_, err = h.e.ExecuteBlock(Block{Height: 6, ProposalRound: seed.Round{View: 6}, PresenceInput: h.presenceOf(), ConsumedSeeds: h.consumed(rSeed)})
	if !errors.Is(err, ErrConsumedSeeds) || !errors.Is(err, seed.ErrConsumedSeedUnused) {
		t.Fatalf("unfinalized S: got %v", err)
	}
	h.fin.Height = 2
	res, err = h.e.ExecuteBlock(Block{Height: 6, ProposalRound: seed.Round{View: 6}, PresenceInput: h.presenceOf(), ConsumedSeeds: h.consumed(rSeed)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Assignments) != 1 || len(res.Assignments[0].Committee) != 3 || !slices.Equal(res.PendingConsumed, [][32]byte{rec.JobID}) {
		t.Fatalf("pass result %+v", res)
	}
	a := res.Assignments[0]
	if a.AssignmentHeight != 6 || a.DeadlineBlock != 52 || a.Mode != seed.ModeDelayed {
		t.Fatalf("assignment %+v", a)
	}
	if h.pending.Len() != 0 || len(h.pending.DueKeys()) != 0 {
		t.Fatal("both keys must be deleted")
	}
	// Replaying the consumption: the deleted record is the consumed state.
	_, err = h.e.ExecuteBlock(Block{Height: 7, ProposalRound: seed.Round{View: 7}, PresenceInput: h.presenceOf(), ConsumedSeeds: h.consumed(rSeed)})
	if !errors.Is(err, seed.ErrConsumedSeedUnused) {
		t.Fatalf("re-consumption: got %v", err)
	}
}

// TestBlockInvalid covers every §9.2 invalid-block case reachable from a
// block's committed fields, each with its sentinel.
func TestBlockInvalid(t *testing.T) {
	type setup func(h *harness) Block
	submitM3 := func(h *harness) {
		h.t.Helper()
		if _, err := h.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: h.presenceOf(),
			ConsumedSeeds: h.consumed(), Submits: []Job{job(9, 3)}}); err != nil {
			h.t.Fatal(err)
		}
		h.fin.Height = 2
	}
	at6 := func(h *harness, cs []byte) Block {
		return Block{Height: 6, ProposalRound: seed.Round{View: 6}, PresenceInput: h.presenceOf(), ConsumedSeeds: cs}
	}
	cases := []struct {
		name  string
		build setup
		want  []error
	}{
		{"second_live_pending_record", func(h *harness) Block {
			r := PendingSelectionV1{Version: 1, SubmittedAt: 1, SelectionStateHeight: 1, CommitteeSize: 2, SeedView: 9}
			r.JobID[0] = 9
			if err := h.pending.Put(r); err != nil {
				h.t.Fatal(err)
			}
			return Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: h.presenceOf(), ConsumedSeeds: h.consumed(), Submits: []Job{job(9, 3)}}
		}, []error{ErrPendingExists}},
		{"seed_entry_consumed_by_nothing", func(h *harness) Block {
			return at6(h, h.consumed(seed.Round{View: 4}))
		}, []error{ErrConsumedSeeds, seed.ErrConsumedSeedUnused}},
		{"seed_other_than_committed_round", func(h *harness) Block {
			submitM3(h)
			return at6(h, h.consumed(seed.Round{View: 4}))
		}, []error{ErrConsumedSeeds, seed.ErrConsumedSeedUnused}},
		{"seed_signature_does_not_verify", func(h *harness) Block {
			submitM3(h)
			b := h.beacon(seed.Round{View: 4}) // a valid seed of another round, relabelled
			b.Round = seed.Round{View: 5}
			cs, _ := seed.ConsumedSeedsV1{seed.ConsumedSeed(b)}.Encode()
			return at6(h, cs)
		}, []error{ErrConsumedSeeds, seed.ErrConsumedSeedUnverified}},
		{"consumed_seeds_malformed", func(h *harness) Block { return at6(h, []byte{0x81}) }, []error{ErrConsumedSeeds}},
		{"consumed_seeds_absent", func(h *harness) Block { return at6(h, nil) }, []error{ErrConsumedSeeds}},
		{"snapshot_root_mismatch", func(h *harness) Block {
			r := PendingSelectionV1{Version: 1, SubmittedAt: 1, SelectionStateHeight: 1, CommitteeSize: 2, SeedView: 5}
			r.JobID[0] = 7
			r.CandidatesSnapshotRoot[0] = 1 // not the block-1 root
			if err := h.e.Jobs.PutJob(job(7, 2)); err != nil {
				h.t.Fatal(err)
			}
			if err := h.pending.Put(r); err != nil {
				h.t.Fatal(err)
			}
			h.fin.Height = 1
			return at6(h, h.consumed(seed.Round{View: 5}))
		}, []error{ErrSnapshotRootMismatch}},
		{"presence_absent_in_active_mode_b", func(h *harness) Block {
			return Block{Height: 2, ProposalRound: seed.Round{View: 2}, ConsumedSeeds: h.consumed()}
		}, []error{presence.ErrBlockPresenceInvalid}},
		{"presence_malformed_in_active_mode_b", func(h *harness) Block {
			return Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: []byte{0x02, 0x00}, ConsumedSeeds: h.consumed()}
		}, []error{presence.ErrBlockPresenceInvalid}},
		{"parent_beacon_does_not_verify", func(h *harness) Block {
			bad := h.beacon(seed.Round{View: 1})
			bad.Round.View = 7
			return Block{Height: 2, ProposalRound: seed.Round{View: 2}, ParentBeacon: &bad, PresenceInput: h.presenceOf(), ConsumedSeeds: h.consumed(), Submits: []Job{job(3, 1)}}
		}, []error{ErrParentBeacon, seed.ErrSeedSignatureInvalid}},
		{"committee_size_zero", func(h *harness) Block {
			return Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: h.presenceOf(), ConsumedSeeds: h.consumed(), Submits: []Job{job(3, 0)}}
		}, []error{ErrCommitteeSize}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, 20, activeParams())
			_, err := h.e.ExecuteBlock(c.build(h))
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Fatalf("got %v, want %v", err, w)
				}
			}
		})
	}
}

// TestFlagOffShadow: with CIP11_PRESENT_FIRST_ENABLED off the live present
// set is empty (§7.2 rule 1) — even a malformed field is harmless — and a
// shadow present-first draw is produced only with the shadow flag.
func TestFlagOffShadow(t *testing.T) {
	p := cip11.DefaultParams()
	p.PresenceShadowEnabled = true
	h := newHarness(t, 50, p)
	res, err := h.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2},
		PresenceInput: h.presenceOf(33), ConsumedSeeds: h.consumed(), Submits: []Job{job(1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Shadow) != 1 || !slices.Equal(res.Shadow[0].Committee, []cip11.Address{h.addrs[33]}) {
		t.Fatalf("shadow %+v", res.Shadow)
	}
	// The live draw ignored presence: it equals a draw with no presence at all.
	h2 := newHarness(t, 50, cip11.DefaultParams())
	res2, err := h2.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2},
		PresenceInput: []byte{0xff}, ConsumedSeeds: h2.consumed(), Submits: []Job{job(1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Assignments[0].Committee, res2.Assignments[0].Committee) || len(res2.Shadow) != 0 {
		t.Fatal("live selection must not depend on presence while the flag is off")
	}
}

// TestMRUGate: below MRU_ACTIVATION_HEIGHT the MRU record is ignored; at
// or above it the iteration-0 multiplier applies (§9.3, §9.4).
func TestMRUGate(t *testing.T) {
	p := activeParams()
	p.MRUActivationHeight = 100
	h := newHarness(t, 10, p)
	store := mru.NewMemStore()
	if err := store.Put(addr(0xee), 0, mru.Record{Runner: h.addrs[3], SetAt: 1}); err != nil {
		t.Fatal(err)
	}
	h.e.MRU = NewMRUSource(store, p)
	res, err := h.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: h.presenceOf(),
		ConsumedSeeds: h.consumed(), Submits: []Job{job(1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	// Below MRU_ACTIVATION_HEIGHT the draw equals one with no MRU store at all.
	h2 := newHarness(t, 10, p)
	h2.e.MRU = nil
	res2, _ := h2.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: h2.presenceOf(),
		ConsumedSeeds: h2.consumed(), Submits: []Job{job(1, 1)}})
	if !slices.Equal(res.Assignments[0].Committee, res2.Assignments[0].Committee) {
		t.Fatal("MRU applied below the activation height")
	}
	// At the gate the draw is the pools' draw with MRU ×4 on runner 3.
	p.MRUActivationHeight = 2
	h3 := newHarness(t, 10, p)
	h3.e.MRU = NewMRUSource(store, p)
	res3, err := h3.e.ExecuteBlock(Block{Height: 2, ProposalRound: seed.Round{View: 2}, PresenceInput: h3.presenceOf(),
		ConsumedSeeds: h3.consumed(), Submits: []Job{job(1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	view, _ := h3.reg.At(1)
	snap, _ := BuildSnapshot(view, 2, p)
	want := NewPools(BranchPresentFirst, snap.Eligible(nil)).Draw(res3.Assignments[0].Seed, 1, &MRU{Address: h3.addrs[3], Multiplier: 4})
	if !slices.Equal(res3.Assignments[0].Committee, want) {
		t.Fatal("MRU not applied at the activation height")
	}
}
