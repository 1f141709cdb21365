package selection

import (
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/seed"
)

const benchRunners = 5000

func benchSnapshot(b *testing.B) (*harness, *Snapshot) {
	h := newHarness(b, benchRunners, activeParams())
	view, _ := h.reg.At(1)
	snap, err := BuildSnapshot(view, 2, h.e.Config.Params)
	if err != nil {
		b.Fatal(err)
	}
	return h, snap
}

// everyThird marks every third benchmark runner present.
func everyThird(h *harness) map[cip11.Address]bool {
	present := map[cip11.Address]bool{}
	for i := 0; i < benchRunners; i += 3 {
		present[h.addrs[i]] = true
	}
	return present
}

// BenchmarkDrawM1 is one M == 1 job over 5,000 eligible runners with base
// weights and pools built once per block: the v3 seed plus one draw.
func BenchmarkDrawM1(b *testing.B) {
	h, snap := benchSnapshot(b)
	present := everyThird(h)
	pools := NewPools(BranchPresentFirst, snap.Eligible(func(a cip11.Address) bool { return present[a] }))
	csb := h.beacon(seed.Round{View: 1}).CanonicalSeedBytes()
	var job cip11.Hash
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		job[0], job[1] = byte(i), byte(i>>8)
		s, _ := seed.SelectionSeedV3(seed.ModeImmediate, csb, job, 2)
		if len(pools.Draw(s, 1, nil)) != 1 {
			b.Fatal("no draw")
		}
	}
}

// BenchmarkDrawM1Naive is the baseline that recomputes the 5,000 base
// weights and the partition for every job.
func BenchmarkDrawM1Naive(b *testing.B) {
	h, snap := benchSnapshot(b)
	present := everyThird(h)
	csb := h.beacon(seed.Round{View: 1}).CanonicalSeedBytes()
	var job cip11.Hash
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		job[0], job[1] = byte(i), byte(i>>8)
		s, _ := seed.SelectionSeedV3(seed.ModeImmediate, csb, job, 2)
		el := make([]Eligible, len(snap.Leaves))
		for k, l := range snap.Leaves {
			w, _ := BaseWeight(l.EffectiveStake, l.ReputationX1e9, 1, 100_000)
			el[k] = Eligible{Address: l.Address, BaseWeight: w, Present: present[l.Address]}
		}
		if len(NewPools(BranchPresentFirst, el).Draw(s, 1, nil)) != 1 {
			b.Fatal("no draw")
		}
	}
}

// BenchmarkDrawM5 is a five-runner committee over 5,000 (copies the pools).
func BenchmarkDrawM5(b *testing.B) {
	_, snap := benchSnapshot(b)
	pools := NewPools(BranchPresentFirst, snap.Eligible(nil))
	var s cip11.Hash
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s[0] = byte(i)
		pools.Draw(s, 5, nil)
	}
}

// BenchmarkBlock1000Jobs is one block with 1,000 M == 1 jobs over 5,000
// runners end to end: presence decode and resolution, the pending pass, the
// snapshot (floor, weights, sort) and 1,000 draws.
func BenchmarkBlock1000Jobs(b *testing.B) {
	h := newHarness(b, benchRunners, activeParams())
	idx := make([]int, 0, benchRunners/2)
	for i := 0; i < benchRunners; i += 2 {
		idx = append(idx, i)
	}
	parent := h.beacon(seed.Round{View: 1})
	blk := Block{Height: 2, ProposalRound: seed.Round{View: 2}, ParentBeacon: &parent,
		PresenceInput: h.presenceOf(idx...), ConsumedSeeds: h.consumed()}
	for i := 0; i < 1000; i++ {
		j := job(0, 1)
		j.JobID[0], j.JobID[1] = byte(i), byte(i>>8)
		blk.Submits = append(blk.Submits, j)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h.e.Jobs = NewMemJobStore()
		b.StartTimer()
		res, err := h.e.ExecuteBlock(blk)
		if err != nil || len(res.Assignments) != 1000 {
			b.Fatal(err)
		}
	}
}
