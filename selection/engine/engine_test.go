package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection"
	"github.com/cip11/cip11/state"
)

// TestImmediatePresentFirst: M == 1 is selected in block S from R_{S−1};
// with exactly one present runner that runner is chosen (§7.3).
func TestImmediatePresentFirst(t *testing.T) {
	h := newHarness(t, 50, activeParams())
	parent := h.beacon(seed.Round{Epoch: 0, View: 1})
	b := h.block(2, submit(job(1, 1))...)
	b.ParentBeacon, b.PresenceInput = &parent, h.presenceOf(17)
	res := h.exec(b)
	if len(res.Assignments) != 1 {
		t.Fatalf("assignments %d", len(res.Assignments))
	}
	a := res.Assignments[0]
	if !slices.Equal(a.Committee, []cip11.Address{h.addrs[17]}) || a.Mode != seed.ModeImmediate ||
		a.AssignmentHeight != 2 || a.DeadlineBlock != 52 || a.Branch != selection.BranchPresentFirst {
		t.Fatalf("assignment %+v", a)
	}
	want, _ := seed.SelectionSeedV3(seed.ModeImmediate, parent.CanonicalSeedBytes(), a.JobID, 2)
	if a.Seed != want {
		t.Fatal("seed is not the v3 mode-0 seed of R_{S-1}")
	}
	rec, ok, _ := h.jobs.Job(a.JobID)
	if !ok || rec.Status != StatusAssigned || !slices.Equal(rec.Committee, a.Committee) || rec.NextDraw != 1 {
		t.Fatalf("job record %+v", rec)
	}
}

// TestPendingLifecycle: M > 1 writes a record in S, stays pending until S is
// finalized and its exact seed is committed, then is assigned and deleted.
func TestPendingLifecycle(t *testing.T) {
	h := newHarness(t, 50, activeParams())
	rSeed := seed.Round{Epoch: 0, View: 5} // advance_round((0,2), 3)
	res := h.exec(h.block(2, submit(job(9, 3))...))
	if len(res.Assignments) != 0 || len(res.PendingWritten) != 1 {
		t.Fatalf("block S must only write the pending record: %+v", res)
	}
	rec := res.PendingWritten[0]
	if rec.SeedEpoch != 0 || rec.SeedView != 5 || rec.SubmittedAt != 2 || rec.CommitteeSize != 3 || rec.SeedDelayViews != 3 {
		t.Fatalf("record %+v", rec)
	}
	// Not finalized in the block's context: committing the seed consumes nothing ⇒ block invalid.
	b := h.block(6)
	b.ConsumedSeeds = h.consumed(rSeed)
	if _, err := h.e.ExecuteBlock(b); !errors.Is(err, ErrConsumedSeeds) || !errors.Is(err, seed.ErrConsumedSeedUnused) {
		t.Fatalf("unfinalized S: got %v", err)
	}
	b.Finalized = fin(2)
	res = h.exec(b)
	if len(res.Assignments) != 1 || len(res.Assignments[0].Committee) != 3 || !slices.Equal(res.PendingConsumed, [][32]byte{rec.JobID}) {
		t.Fatalf("pass result %+v", res)
	}
	a := res.Assignments[0]
	if a.AssignmentHeight != 6 || a.Mode != seed.ModeDelayed {
		t.Fatalf("assignment %+v", a)
	}
	if h.pending.Len() != 0 || len(h.pending.DueKeys()) != 0 {
		t.Fatal("both keys must be deleted")
	}
	// Replaying the consumption: the deleted record is the consumed state.
	b = h.block(7)
	b.ConsumedSeeds, b.Finalized = h.consumed(rSeed), fin(6)
	if _, err := h.e.ExecuteBlock(b); !errors.Is(err, seed.ErrConsumedSeedUnused) {
		t.Fatalf("re-consumption: got %v", err)
	}
}

// TestBlockInvalid covers every §9.2 invalid-block case reachable from a
// block's committed fields, each with its sentinel.
func TestBlockInvalid(t *testing.T) {
	submitM3 := func(h *harness) {
		h.t.Helper()
		h.exec(h.block(2, submit(job(9, 3))...))
	}
	at6 := func(h *harness, cs []byte) Block {
		b := h.block(6)
		b.ConsumedSeeds, b.Finalized = cs, fin(2)
		return b
	}
	cases := []struct {
		name  string
		build func(h *harness) Block
		want  []error
	}{
		{"second_live_pending_record", func(h *harness) Block {
			r := PendingSelectionV1{Version: 1, SubmittedAt: 1, SelectionStateHeight: 1, CommitteeSize: 2, SeedView: 9}
			r.JobID[0] = 9
			if err := h.pending.Put(r); err != nil {
				h.t.Fatal(err)
			}
			return h.block(2, submit(job(9, 3))...)
		}, []error{ErrPendingExists}},
		{"duplicate_job_id", func(h *harness) Block {
			return h.block(2, submit(job(9, 1), job(9, 1))...)
		}, []error{ErrDuplicateJob}},
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
			if err := h.jobs.Insert(JobRecord{Job: job(7, 2), SubmittedAt: 1, Status: StatusPending, Mode: seed.ModeDelayed}); err != nil {
				h.t.Fatal(err)
			}
			if err := h.pending.Put(r); err != nil {
				h.t.Fatal(err)
			}
			b := at6(h, h.consumed(seed.Round{View: 5}))
			b.Finalized = fin(1)
			return b
		}, []error{ErrSnapshotRootMismatch}},
		{"presence_absent_in_active_mode_b", func(h *harness) Block {
			b := h.block(2)
			b.PresenceInput = nil
			return b
		}, []error{presence.ErrBlockPresenceInvalid}},
		{"presence_malformed_in_active_mode_b", func(h *harness) Block {
			b := h.block(2)
			b.PresenceInput = []byte{0x02, 0x00}
			return b
		}, []error{presence.ErrBlockPresenceInvalid}},
		{"parent_beacon_does_not_verify", func(h *harness) Block {
			bad := h.beacon(seed.Round{View: 1})
			bad.Round.View = 7
			b := h.block(2, submit(job(3, 1))...)
			b.ParentBeacon = &bad
			return b
		}, []error{ErrParentBeacon, seed.ErrSeedSignatureInvalid}},
		{"committee_size_zero", func(h *harness) Block {
			return h.block(2, submit(job(3, 0))...)
		}, []error{ErrCommitteeSize}},
		{"job_kind_outside_table", func(h *harness) Block {
			j := job(3, 3)
			j.Kind = 200
			return h.block(2, submit(j)...)
		}, []error{mru.ErrUnknownJobKind}},
		{"verified_result_of_unknown_job", func(h *harness) Block {
			return h.block(2, Verified{JobID: [32]byte{42}})
		}, []error{ErrJobNotAssigned}},
		{"unknown_transaction", func(h *harness) Block {
			return h.block(2, nil)
		}, []error{ErrUnknownTx}},
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
	b := h.block(2, submit(job(1, 1))...)
	b.PresenceInput = h.presenceOf(33)
	res := h.exec(b)
	if len(res.Shadow) != 1 || !slices.Equal(res.Shadow[0].Committee, []cip11.Address{h.addrs[33]}) {
		t.Fatalf("shadow %+v", res.Shadow)
	}
	// The live draw ignored presence: it equals a draw with no presence at all.
	h2 := newHarness(t, 50, cip11.DefaultParams())
	b2 := h2.block(2, submit(job(1, 1))...)
	b2.PresenceInput = []byte{0xff}
	res2 := h2.exec(b2)
	if !slices.Equal(res.Assignments[0].Committee, res2.Assignments[0].Committee) || len(res2.Shadow) != 0 {
		t.Fatal("live selection must not depend on presence while the flag is off")
	}
}

// TestMRUGate: below MRU_ACTIVATION_HEIGHT the MRU record is ignored; at
// or above it the iteration-0 multiplier applies (§9.3, §9.4).
func TestMRUGate(t *testing.T) {
	p := activeParams()
	p.MRUActivationHeight = 100
	withMRU := func(p cip11.Params) *harness {
		h := newHarness(t, 10, p)
		if err := h.mru.Put(addr(0xee), 0, mru.Record{Runner: h.addrs[3], SetAt: 1}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := withMRU(p)
	res := h.exec(h.block(2, submit(job(1, 1))...))
	// Below MRU_ACTIVATION_HEIGHT the draw equals one with an empty MRU store.
	h2 := newHarness(t, 10, p)
	res2 := h2.exec(h2.block(2, submit(job(1, 1))...))
	if !slices.Equal(res.Assignments[0].Committee, res2.Assignments[0].Committee) {
		t.Fatal("MRU applied below the activation height")
	}
	// At the gate the draw is the pools' draw with MRU ×4 on runner 3.
	p.MRUActivationHeight = 2
	h3 := withMRU(p)
	res3 := h3.exec(h3.block(2, submit(job(1, 1))...))
	if got, want := res3.Assignments[0].Committee, drawWithMRU(t, h3, p, res3.Assignments[0].Seed, h3.addrs[3]); !slices.Equal(got, want) {
		t.Fatalf("MRU not applied at the activation height: %v, want %v", got, want)
	}
}

// drawWithMRU is the reference M == 1 draw over block 2's snapshot with an
// MRU ×4 bias on runner a.
func drawWithMRU(t *testing.T, h *harness, p cip11.Params, s cip11.Hash, a cip11.Address) []cip11.Address {
	t.Helper()
	view, _ := h.reg.At(1)
	snap, err := selection.BuildSnapshot(view, 2, p)
	if err != nil {
		t.Fatal(err)
	}
	return selection.NewPools(selection.BranchPresentFirst, snap.Eligible(nil)).Draw(s, 1, &selection.MRU{Address: a, Multiplier: 4})
}

// TestNewValidatesConfig: a nil dependency is a constructor error, never a
// panic at execution (the old engine panicked on a nil Presence or Keys).
func TestNewValidatesConfig(t *testing.T) {
	h := newHarness(t, 3, activeParams())
	for _, field := range []string{"Registry", "Validators", "Jobs", "Pending", "Keys", "Advance", "MRU", "Presence"} {
		cfg := h.cfg
		switch field {
		case "Registry":
			cfg.Registry = nil
		case "Validators":
			cfg.Validators = nil
		case "Jobs":
			cfg.Jobs = nil
		case "Pending":
			cfg.Pending = nil
		case "Keys":
			cfg.Keys = nil
		case "Advance":
			cfg.Advance = nil
		case "MRU":
			cfg.MRU = nil
		case "Presence":
			cfg.Presence = nil
		}
		if _, err := New(cfg); !errors.Is(err, ErrNilDependency) {
			t.Errorf("nil %s: got %v", field, err)
		}
	}
	cfg := h.cfg
	cfg.GenesisBeacon = nil
	if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, seed.ErrNoGenesisBeacon) {
		t.Errorf("present-first without genesis beacon: got %v", err)
	}
	cfg = h.cfg
	cfg.Params.MRUWeightMultiplier = 0
	if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, cip11.ErrInvalidParams) {
		t.Errorf("invalid params: got %v", err)
	}
	cfg = h.cfg
	cfg.SnapshotCache = -1
	if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative cache: got %v", err)
	}
}

// TestJobFilters: job-bound non-floor filters (§9.1) apply to that job
// only: a filtered-out runner is never drawn for it, and the filtered
// snapshot is not shared with the block's other jobs.
func TestJobFilters(t *testing.T) {
	h := newHarness(t, 3, activeParams())
	banned := h.addrs[0]
	h.cfg.Filters = func(j Job) []selection.Filter {
		if j.JobID[0] != 1 {
			return nil
		}
		return []selection.Filter{selection.FilterFunc(func(r state.Runner) bool { return r.Address != banned })}
	}
	h.rebuild()
	var txs []Tx
	for i := 0; i < 40; i++ {
		j := job(byte(i%2), 1)
		j.JobID[1] = byte(i)
		txs = append(txs, Submit{Job: j})
	}
	res := h.exec(h.block(2, txs...))
	sawBanned := false
	for _, a := range res.Assignments {
		if a.Committee[0] == banned {
			if a.JobID[0] == 1 {
				t.Fatalf("filtered runner drawn for job %x", a.JobID)
			}
			sawBanned = true
		}
	}
	if !sawBanned {
		t.Fatal("the filter leaked to unfiltered jobs (runner 0 never drawn in 20 jobs)")
	}
}
