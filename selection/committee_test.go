package selection

import (
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
	"github.com/cip11/cip11/state"
	"pgregory.net/rapid"
)

func addr(b byte) cip11.Address {
	var a cip11.Address
	for i := range a {
		a[i] = b
	}
	return a
}

// TestPinWeightsStayPaired is the §9.2 pin test: three candidates registered
// in non-address order with distinct stake/reputation weights; weights must
// stay paired with their runners through address sorting, the
// present/fallback partition and swap_remove.
func TestPinWeightsStayPaired(t *testing.T) {
	A, B, C := addr(0xaa), addr(0xbb), addr(0xcc)
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	for _, r := range []state.Runner{ // registration order C, A, B: not address-sorted
		{Address: C, LastHeartbeat: 1, Stake: cip11.U128From64(3000), ReputationX1e9: 250_000_000},   // 3000·0.5 = 1500
		{Address: A, LastHeartbeat: 1, Stake: cip11.U128From64(1000), ReputationX1e9: 1_000_000_000}, // 1000·1.0 = 1000
		{Address: B, LastHeartbeat: 1, Stake: cip11.U128From64(2000), ReputationX1e9: 100_000},       // 2000·0.1 (floor) = 200
	} {
		if err := reg.Register(1, r); err != nil {
			t.Fatal(err)
		}
	}
	view, _ := reg.At(1)
	snap, err := BuildSnapshot(view, 2, cip11.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	wantSorted := []Eligible{{A, cip11.U128From64(1000), false}, {B, cip11.U128From64(200), true}, {C, cip11.U128From64(1500), false}}
	got := snap.Eligible(func(a cip11.Address) bool { return a == B })
	if !slices.Equal(got, wantSorted) {
		t.Fatalf("address-sorted snapshot lost pairing: %v", got)
	}

	p := NewPools(BranchPresentFirst, got)
	assertPool(t, "present", p.present, []cip11.Address{B}, []uint64{200})
	assertPool(t, "fallback", p.fallback, []cip11.Address{A, C}, []uint64{1000, 1500})

	// swap_remove keeps each weight with its runner and does not re-sort.
	all := NewPools(BranchFullSet, got).present.clone()
	all.swapRemove(0) // A leaves; C moves into slot 0
	assertPool(t, "after swap_remove(0)", all, []cip11.Address{C, B}, []uint64{1500, 200})

	// The whole committee, frozen: B first (present-first), then the fallback
	// pool in draw order.
	var seed cip11.Hash
	seed[0] = 0x01
	committee := p.Draw(seed, 3, nil)
	if len(committee) != 3 || committee[0] != B {
		t.Fatalf("present runner must be drawn first: %v", committee)
	}
	if !slices.Equal(committee, []cip11.Address{B, A, C}) {
		t.Fatalf("committee = %v", committee)
	}
}

func assertPool(t *testing.T, name string, p pool, addrs []cip11.Address, weights []uint64) {
	t.Helper()
	if !slices.Equal(p.addrs, addrs) {
		t.Fatalf("%s: addrs %v want %v", name, p.addrs, addrs)
	}
	for i, w := range weights {
		if p.weights[i] != cip11.U128From64(w) {
			t.Fatalf("%s: weight[%d] = %s want %d", name, i, p.weights[i], w)
		}
	}
	var s sum192
	for _, w := range p.weights {
		s.add(w)
	}
	if s != p.sum {
		t.Fatalf("%s: running sum drifted", name)
	}
}

// naiveCommittee is the §9.2 pseudo-code transcribed literally: weights are
// recomputed for the active pool every iteration, MRU applied at i == 0, and
// WeightedDraw re-sums the total. The fast loop must agree with it.
func naiveCommittee(branch Branch, eligible []Eligible, seed cip11.Hash, m uint32, mru *MRU) []cip11.Address {
	var present, fallback []Eligible
	for _, e := range eligible {
		switch {
		case branch == BranchFullSet:
			present = append(present, e)
		case e.Present:
			present = append(present, e)
		case branch == BranchPresentFirst:
			fallback = append(fallback, e)
		}
	}
	var selected []cip11.Address
	for i := uint64(0); i < uint64(m); i++ {
		pool := &present
		if len(present) == 0 {
			pool = &fallback
		}
		if len(*pool) == 0 {
			break
		}
		weights := make([]cip11.U128, len(*pool))
		for j, e := range *pool {
			weights[j] = e.BaseWeight
			if i == 0 && mru != nil && e.Address == mru.Address {
				weights[j] = e.BaseWeight.MulSat64(mru.Multiplier)
			}
		}
		j, ok := WeightedDraw(weights, seed, i)
		if !ok {
			break
		}
		selected = append(selected, (*pool)[j].Address)
		last := len(*pool) - 1
		(*pool)[j] = (*pool)[last]
		*pool = (*pool)[:last]
	}
	return selected
}

func genWeight(t *rapid.T, label string) cip11.U128 {
	switch rapid.IntRange(0, 3).Draw(t, label+"kind") {
	case 0:
		return cip11.U128{}
	case 1:
		return cip11.U128From64(rapid.Uint64Range(0, 1000).Draw(t, label))
	case 2:
		return cip11.U128From64(rapid.Uint64().Draw(t, label))
	}
	return cip11.U128{Hi: rapid.Uint64().Draw(t, label+"hi"), Lo: rapid.Uint64().Draw(t, label)}
}

func genEligible(t *rapid.T) []Eligible {
	n := rapid.IntRange(0, 40).Draw(t, "n")
	out := make([]Eligible, n)
	for i := range out {
		out[i] = Eligible{Address: addr(byte(i + 1)), BaseWeight: genWeight(t, "w"), Present: rapid.Bool().Draw(t, "present")}
	}
	return out
}

func genSeed(t *rapid.T) cip11.Hash {
	var s cip11.Hash
	copy(s[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "seed"))
	return s
}

// TestCommitteeMatchesNaive: the incremental committee loop equals the
// literal §9.2 transcription for every branch, size and MRU.
func TestCommitteeMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		el := genEligible(t)
		branch := Branch(rapid.IntRange(0, 2).Draw(t, "branch"))
		m := uint32(rapid.IntRange(0, 45).Draw(t, "m"))
		seed := genSeed(t)
		var mru *MRU
		if len(el) > 0 && rapid.Bool().Draw(t, "hasMRU") {
			mru = &MRU{Address: el[rapid.IntRange(0, len(el)-1).Draw(t, "mruIdx")].Address, Multiplier: rapid.Uint64().Draw(t, "mult")}
		}
		got := NewPools(branch, el).Draw(seed, m, mru)
		want := naiveCommittee(branch, el, seed, m, mru)
		if !slices.Equal(got, want) {
			t.Fatalf("fast %v\nnaive %v", got, want)
		}
	})
}

// TestPartitionStableTotal: §9.2 partition keeps eligible order inside each
// pool and puts every runner in exactly one of them.
func TestPartitionStableTotal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		el := genEligible(t)
		p := NewPools(BranchPresentFirst, el)
		var wantP, wantF []cip11.Address
		for _, e := range el {
			if e.Present {
				wantP = append(wantP, e.Address)
			} else {
				wantF = append(wantF, e.Address)
			}
		}
		if !slices.Equal(p.present.addrs, wantP) || !slices.Equal(p.fallback.addrs, wantF) {
			t.Fatalf("partition not stable/total")
		}
	})
}

// TestFailOpenAndPresentFirst: in Mode B every floor-eligible runner with a
// non-zero weight stays drawable (drawing |eligible| fills with all of them),
// and no fallback runner is drawn while a present one remains (§7.3).
func TestFailOpenAndPresentFirst(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		el := genEligible(t)
		for i := range el {
			if el[i].BaseWeight.IsZero() {
				el[i].BaseWeight = cip11.U128From64(1)
			}
		}
		got := NewPools(BranchPresentFirst, el).Draw(genSeed(t), uint32(len(el)), nil)
		if len(got) != len(el) {
			t.Fatalf("fail-open violated: drew %d of %d", len(got), len(el))
		}
		present := 0
		for _, e := range el {
			if e.Present {
				present++
			}
		}
		isPresent := map[cip11.Address]bool{}
		for _, e := range el {
			isPresent[e.Address] = e.Present
		}
		for i, a := range got {
			if (i < present) != isPresent[a] {
				t.Fatalf("draw %d: fallback runner drawn while present ones remain", i)
			}
		}
	})
}

// TestModeANeverDrawsAbsent: an effective Mode A never selects a runner not
// proven present (§9.2 point d).
func TestModeANeverDrawsAbsent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		el := genEligible(t)
		got := NewPools(BranchModeA, el).Draw(genSeed(t), uint32(rapid.IntRange(0, 45).Draw(t, "m")), nil)
		for _, a := range got {
			for _, e := range el {
				if e.Address == a && !e.Present {
					t.Fatalf("Mode A drew non-present %v", a)
				}
			}
		}
	})
}

// TestDrawDeterministic: same inputs ⇒ same committee, and Draw leaves the
// pools untouched.
func TestDrawDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		el := genEligible(t)
		seed := genSeed(t)
		m := uint32(rapid.IntRange(0, 45).Draw(t, "m"))
		p := NewPools(BranchPresentFirst, el)
		a := p.Draw(seed, m, nil)
		b := p.Draw(seed, m, nil)
		c := NewPools(BranchPresentFirst, slices.Clone(el)).Draw(seed, m, nil)
		if !slices.Equal(a, b) || !slices.Equal(a, c) {
			t.Fatal("draw not deterministic")
		}
	})
}

func TestChooseBranch(t *testing.T) {
	cases := []struct {
		modeA, multi bool
		m            uint32
		want         Branch
	}{
		{true, true, 3, BranchModeA},
		{true, false, 1, BranchModeA},
		{false, true, 2, BranchFullSet},
		{false, true, 1, BranchPresentFirst},
		{false, false, 5, BranchPresentFirst},
	}
	for _, c := range cases {
		if got := ChooseBranch(c.modeA, c.multi, c.m); got != c.want {
			t.Errorf("ChooseBranch(%v,%v,%d) = %v want %v", c.modeA, c.multi, c.m, got, c.want)
		}
	}
}

// TestHugeCommitteeSizeDoesNotAllocate: committee_size comes from the job
// (up to 2^32−1); the loop must not reserve memory for it.
func TestHugeCommitteeSizeDoesNotAllocate(t *testing.T) {
	p := NewPools(BranchPresentFirst, []Eligible{{Address: addr(1), BaseWeight: cip11.U128From64(1)}, {Address: addr(2), BaseWeight: cip11.U128From64(1)}})
	allocs := testing.AllocsPerRun(10, func() { p.Draw(cip11.Hash{}, ^uint32(0), nil) })
	if got := p.Draw(cip11.Hash{}, ^uint32(0), nil); len(got) != 2 || allocs > 8 {
		t.Fatalf("drew %d, %v allocs", len(got), allocs)
	}
}

// TestSnapshotPoolsEqualNewPools: Snapshot.Pools is NewPools over
// Snapshot.Eligible for every branch and presence pattern.
func TestSnapshotPoolsEqualNewPools(t *testing.T) {
	s := &Snapshot{T: 1}
	for i := 0; i < 40; i++ {
		s.Leaves = append(s.Leaves, merkle.Leaf{Address: addr(byte(i)), BaseWeight: cip11.U128From64(uint64(10 + i*i))})
	}
	presents := []func(cip11.Address) bool{nil, func(a cip11.Address) bool { return a[0]%3 == 0 }, func(cip11.Address) bool { return true }}
	for _, br := range []Branch{BranchPresentFirst, BranchFullSet, BranchModeA} {
		for pi, isPresent := range presents {
			a, b := s.Pools(br, isPresent), NewPools(br, s.Eligible(isPresent))
			if a.PresentLen() != b.PresentLen() || a.FallbackLen() != b.FallbackLen() {
				t.Fatalf("branch %v presence %d: sizes differ", br, pi)
			}
			seed := cip11.Keccak256([]byte{byte(br), byte(pi)})
			if got, want := a.Draw(seed, 7, nil), b.Draw(seed, 7, nil); !slices.Equal(got, want) {
				t.Fatalf("branch %v presence %d: draws differ", br, pi)
			}
		}
	}
}
