package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection"
)

// Audit findings of the first spec audit (DECISIONS D21–D26, SPEC-NOTES
// SEL5). Each test fails on the engine before the fix.

// modeAParams makes Mode A effective with a 100-validator set: k = 20 =
// K_HARD_MIN and t_hard = 11 (§8.4 guard).
func modeAParams(presentFirst bool) cip11.Params {
	p := cip11.DefaultParams()
	p.PresentFirstEnabled = presentFirst
	p.PresenceHardExcludeEnabled = true
	p.MinSubset, p.MaxSubset, p.THard = 20, 32, 11
	return p
}

// TestD24FlagOffNoModeANoMRU: with CIP11_PRESENT_FIRST_ENABLED off, the
// hard-exclude flag and a guard that holds change nothing: no Mode-A
// branch (the committee fills from the whole eligible set), and the MRU
// runner gets no multiplier.
func TestD24FlagOffNoModeANoMRU(t *testing.T) {
	p := modeAParams(false)
	p.MRUActivationHeight = 0
	h := newHarness(t, 30, p)
	h.cfg.Validators = FixedValidators(100)
	h.rebuild()
	if err := h.mru.Put(addr(0xee), 0, mru.Record{Runner: h.addrs[3], SetAt: 1}); err != nil {
		t.Fatal(err)
	}
	res := h.exec(h.block(2, submit(job(1, 1))...))
	a := res.Assignments[0]
	if a.Branch == selection.BranchModeA || len(a.Committee) != 1 {
		t.Fatalf("flag off took Mode A: %+v", a)
	}
	view, _ := h.reg.At(1)
	snap, _ := selection.BuildSnapshot(view, 2, p)
	want := selection.NewPools(selection.BranchPresentFirst, snap.Eligible(nil)).Draw(a.Seed, 1, nil)
	if !slices.Equal(a.Committee, want) {
		t.Fatalf("flag off: committee %v, want the unbiased draw %v", a.Committee, want)
	}
	// Sanity: the same chain with the flag on is Mode A and under-fills.
	h2 := newHarness(t, 30, modeAParams(true))
	h2.cfg.Validators = FixedValidators(100)
	h2.rebuild()
	if a2 := h2.exec(h2.block(2, submit(job(1, 1))...)).Assignments[0]; a2.Branch != selection.BranchModeA || len(a2.Committee) != 0 {
		t.Fatalf("flag on: %+v", a2)
	}
}

// TestD21DeadlineFromAssignmentBlock: an M > 1 job submitted at S = 2 and
// assigned at H = 9 gets deadline_block = H + timeout_blocks = 59, not
// S + timeout_blocks = 52.
func TestD21DeadlineFromAssignmentBlock(t *testing.T) {
	h := newHarness(t, 50, activeParams())
	h.exec(h.block(2, submit(job(9, 3))...))
	b := h.block(9)
	b.ConsumedSeeds, b.Finalized = h.consumed(seed.Round{View: 5}), fin(8)
	a := h.exec(b).Assignments[0]
	if a.AssignmentHeight != 9 || a.DeadlineBlock != 59 {
		t.Fatalf("assignment height %d deadline %d, want 9 and 59", a.AssignmentHeight, a.DeadlineBlock)
	}
}

// TestD22FinalityFromBlockInput: what is finalized is part of the block,
// so a block built by a proposer whose finality view covers S is valid for
// every verifier, whatever its own view; and the same block without S
// finalized leaves the record pending (the proposer must not commit its
// seed). ProposeConsumedSeeds is the proposer side.
func TestD22FinalityFromBlockInput(t *testing.T) {
	proposer, verifier := newHarness(t, 20, activeParams()), newHarness(t, 20, activeParams())
	for _, h := range []*harness{proposer, verifier} {
		h.exec(h.block(2, submit(job(9, 3))...))
	}
	seeds := func(r seed.Round) (seed.Signature, bool, error) { return proposer.beacon(r).Signature, true, nil }
	round := seed.Round{View: 6}
	none, err := ProposeConsumedSeeds(proposer.pending, round, fin(1), seeds)
	if err != nil || len(none) != 1 || none[0] != 0x80 {
		t.Fatalf("S not finalized: want the empty array, got %x %v", none, err)
	}
	cs, err := ProposeConsumedSeeds(proposer.pending, round, fin(2), seeds)
	if err != nil {
		t.Fatal(err)
	}
	b := proposer.block(6)
	b.ConsumedSeeds, b.Finalized = cs, fin(2)
	want := proposer.exec(b)
	got := verifier.exec(b)
	if len(got.Assignments) != 1 || !slices.Equal(got.Assignments[0].Committee, want.Assignments[0].Committee) {
		t.Fatalf("verifier disagrees with proposer: %+v vs %+v", got, want)
	}
}

// TestD23MRUWriteVisibleToLaterSubmit: a verified result earlier in a block
// writes mru_key, and a later JobSubmit of the same (submitter, job_kind)
// in the same block reads it at i == 0.
func TestD23MRUWriteVisibleToLaterSubmit(t *testing.T) {
	p := activeParams()
	p.MRUActivationHeight = 0
	h := newHarness(t, 10, p)
	first := h.exec(h.block(2, submit(job(1, 1))...)).Assignments[0]
	winner := first.Committee[0]
	res := h.exec(h.block(3, Verified{JobID: first.JobID, Matching: []cip11.Address{winner}}, Submit{Job: job(2, 1)}))
	if len(res.MRUWrites) != 1 || res.MRUWrites[0].Record != (mru.Record{Runner: winner, SetAt: 3}) {
		t.Fatalf("mru writes %+v", res.MRUWrites)
	}
	a := res.Assignments[0]
	view, _ := h.reg.At(2)
	snap, _ := selection.BuildSnapshot(view, 3, p)
	want := selection.NewPools(selection.BranchPresentFirst, snap.Eligible(nil)).Draw(a.Seed, 1, &selection.MRU{Address: winner, Multiplier: p.MRUWeightMultiplier})
	if !slices.Equal(a.Committee, want) {
		t.Fatalf("later submit did not see the MRU write: %v, want %v", a.Committee, want)
	}
	if rec, _, _ := h.jobs.Job(first.JobID); rec.Status != StatusCompleted {
		t.Fatalf("verified job status %v", rec.Status)
	}
}

// switchingValidators is one validator below height 10 and four from 10 on.
type switchingValidators struct{}

func (switchingValidators) ParticipantsAt(h uint64) (int, error) {
	if h < 10 {
		return 1, nil
	}
	return 4, nil
}

// TestD25TopologyFromValidatorSet: multi_validator comes from the
// validator set active at the assignment height: an M > 1 job assigned
// before the switch takes present_first, one assigned after it full_set.
func TestD25TopologyFromValidatorSet(t *testing.T) {
	for _, c := range []struct {
		at   uint64
		want selection.Branch
	}{{9, selection.BranchPresentFirst}, {10, selection.BranchFullSet}} {
		h := newHarness(t, 20, activeParams())
		h.cfg.Validators = switchingValidators{}
		h.rebuild()
		h.exec(h.block(2, submit(job(9, 3))...))
		b := h.block(c.at)
		b.ConsumedSeeds, b.Finalized = h.consumed(seed.Round{View: 5}), fin(2)
		if a := h.exec(b).Assignments[0]; a.Branch != c.want {
			t.Errorf("assigned at %d: branch %v, want %v", c.at, a.Branch, c.want)
		}
	}
}

// TestD26TimeoutReselection: a job whose result is not included by
// deadline_block is re-selected at deadline_block + 1 (§11.2) with its
// original seed, continuing the draw counter, excluding the runners that
// timed out; a runner that delivered keeps its seat; after three
// re-selections the job expires.
func TestD26TimeoutReselection(t *testing.T) {
	h := newHarness(t, 20, activeParams())
	j := job(1, 2)
	j.TimeoutBlocks = 5
	h.exec(h.block(2, submit(j)...))
	b := h.block(6)
	b.ConsumedSeeds, b.Finalized = h.consumed(seed.Round{View: 5}), fin(5)
	first := h.exec(b).Assignments[0] // deadline 11
	if first.DeadlineBlock != 11 || len(first.Committee) != 2 {
		t.Fatalf("first %+v", first)
	}
	kept, late := first.Committee[0], first.Committee[1]
	h.exec(h.block(11, ResultSubmit{JobID: j.JobID, Runner: kept})) // by the deadline: delivered
	res := h.exec(h.block(12))
	if len(res.Assignments) != 1 {
		t.Fatalf("no re-selection at deadline+1: %+v", res)
	}
	re := res.Assignments[0]
	if re.Reselection != 1 || re.AssignmentHeight != 12 || re.DeadlineBlock != 17 || re.Seed != first.Seed ||
		len(re.Committee) != 2 || re.Committee[0] != kept || slices.Contains(re.Committee, late) {
		t.Fatalf("re-selection %+v (kept %x, late %x)", re, kept, late)
	}
	// The new seat is the draw at global i = 2 over the eligible set minus
	// the kept and timed-out runners (no MRU).
	view, _ := h.reg.At(5)
	snap, _ := selection.BuildSnapshot(view, 6, h.cfg.Params)
	el := slices.DeleteFunc(snap.Eligible(nil), func(e selection.Eligible) bool { return e.Address == kept || e.Address == late })
	if want := selection.NewPools(selection.BranchPresentFirst, el).DrawFrom(first.Seed, 2, 1); !slices.Equal(re.Committee[1:], want) {
		t.Fatalf("redrawn seat %v, want %v", re.Committee[1:], want)
	}
	// Three re-selections, then expiry.
	deadline := re.DeadlineBlock
	for n := 2; n <= 3; n++ {
		r := h.exec(h.block(deadline + 1)).Assignments
		if len(r) != 1 || r[0].Reselection != uint32(n) {
			t.Fatalf("re-selection %d: %+v", n, r)
		}
		deadline = r[0].DeadlineBlock
	}
	res = h.exec(h.block(deadline + 1))
	if len(res.Assignments) != 0 || !slices.Equal(res.Expired, [][32]byte{j.JobID}) {
		t.Fatalf("want expiry after 3 re-selections: %+v", res)
	}
	rec, _, _ := h.jobs.Job(j.JobID)
	if rec.Status != StatusExpired || len(rec.TimedOut) != 3 {
		t.Fatalf("expired record %+v", rec)
	}
}

// TestD26CompletedJobNotReselected: a verified result before the deadline
// ends the job; nothing happens at deadline + 1.
func TestD26CompletedJobNotReselected(t *testing.T) {
	h := newHarness(t, 20, activeParams())
	j := job(1, 1)
	j.TimeoutBlocks = 3
	a := h.exec(h.block(2, submit(j)...)).Assignments[0]
	h.exec(h.block(4, ResultSubmit{JobID: j.JobID, Runner: a.Committee[0]}, Verified{JobID: j.JobID, Matching: a.Committee}))
	if res := h.exec(h.block(6)); len(res.Assignments)+len(res.Expired) != 0 {
		t.Fatalf("completed job touched at timeout: %+v", res)
	}
}

// TestSEL5ParentBeaconVerifiedEveryBlock: the parent beacon is a consensus
// input of every block and is verified once per block, whether or not an
// M == 1 job uses it (SPEC-NOTES SEL5). The old engine accepted a block
// with a forged parent beacon when it had no M == 1 submit.
func TestSEL5ParentBeaconVerifiedEveryBlock(t *testing.T) {
	h := newHarness(t, 10, activeParams())
	good := h.beacon(seed.Round{View: 1})
	bad := good
	bad.Signature[5] ^= 1
	for _, c := range []struct {
		name   string
		beacon *seed.Beacon
		txs    []Tx
		want   error
	}{
		{"valid_no_job", &good, nil, nil},
		{"valid_with_m1", &good, submit(job(1, 1)), nil},
		{"invalid_no_job", &bad, nil, ErrParentBeacon},
		{"invalid_with_m1", &bad, submit(job(2, 1)), ErrParentBeacon},
		{"invalid_with_m3_only", &bad, submit(job(3, 3)), ErrParentBeacon},
		{"absent_uses_genesis", nil, submit(job(4, 1)), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := h.block(2, c.txs...)
			b.ParentBeacon = c.beacon
			_, err := h.e.ExecuteBlock(b)
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestSnapshotCacheIdentical: the non-consensus snapshot cache (§9.2) never
// changes a result: the same chain with and without it assigns the same
// committees.
func TestSnapshotCacheIdentical(t *testing.T) {
	run := func(cache int) []Assignment {
		h := newHarness(t, 30, activeParams())
		h.cfg.SnapshotCache = cache
		h.rebuild()
		h.exec(h.block(2, submit(job(1, 2), job(2, 3), job(3, 1))...))
		b := h.block(6)
		b.ConsumedSeeds, b.Finalized = h.consumed(seed.Round{View: 5}), fin(2)
		return h.exec(b).Assignments
	}
	with, without := run(8), run(0)
	if len(with) != 2 || len(without) != 2 {
		t.Fatalf("assignments %d / %d", len(with), len(without))
	}
	for i := range with {
		if !slices.Equal(with[i].Committee, without[i].Committee) || with[i].Seed != without[i].Seed {
			t.Fatalf("cache changed assignment %d", i)
		}
	}
}

// TestSnapshotCacheEviction: the cache holds at most its limit, evicts
// the lowest heights first, and is emptied when a height repeats (reorg).
func TestSnapshotCacheEviction(t *testing.T) {
	c := newSnapshotCache(2)
	c.begin(10)
	for _, h := range []uint64{7, 3, 9} {
		c.put(&selection.Snapshot{T: h})
	}
	if c.get(3) != nil || c.get(7) == nil || c.get(9) == nil || len(c.entries) != 2 {
		t.Fatalf("eviction: %v", c.entries)
	}
	c.put(&selection.Snapshot{T: 1}) // below every cached height: the lowest, so the one evicted
	if c.get(1) != nil || c.get(7) == nil || c.get(9) == nil {
		t.Fatalf("insert below oldest: %v", c.entries)
	}
	c.begin(10)
	if len(c.entries) != 0 {
		t.Fatal("a repeated height must empty the cache")
	}
}
