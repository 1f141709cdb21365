package selection

import (
	"encoding/binary"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
)

const benchRunners = 5000

// benchRegistry registers n runners at height 1, registration order ≠
// address order, with distinct stakes.
type benchRegistry struct {
	reg   *state.MemRegistry
	addrs []cip11.Address
}

func newBenchRegistry(b *testing.B, n int) *benchRegistry {
	r := &benchRegistry{reg: state.NewMemRegistry(state.DefaultReputationConfig())}
	for i := 0; i < n; i++ {
		var a cip11.Address
		binary.BigEndian.PutUint32(a[:4], uint32(i)*2654435761)
		binary.BigEndian.PutUint32(a[16:], uint32(i))
		r.addrs = append(r.addrs, a)
		if err := r.reg.Register(1, state.Runner{Address: a, LastHeartbeat: 1, Stake: cip11.U128From64(uint64(1000 + i)), ReputationX1e9: 1_000_000_000}); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

func benchSnapshot(b *testing.B) (*benchRegistry, *Snapshot) {
	h := newBenchRegistry(b, benchRunners)
	view, _ := h.reg.At(1)
	p := cip11.DefaultParams()
	p.PresentFirstEnabled = true
	snap, err := BuildSnapshot(view, 2, p)
	if err != nil {
		b.Fatal(err)
	}
	return h, snap
}

// everyThird marks every third benchmark runner present.
func everyThird(h *benchRegistry) map[cip11.Address]bool {
	present := map[cip11.Address]bool{}
	for i := 0; i < benchRunners; i += 3 {
		present[h.addrs[i]] = true
	}
	return present
}

// benchBeaconSeed stands in for canonical_seed_bytes of a parent beacon.
func benchBeaconSeed() cip11.Hash { return cip11.Keccak256([]byte("bench parent beacon")) }

// BenchmarkDrawM1 is one M == 1 job over 5,000 eligible runners with base
// weights and pools built once per block: the v3 seed plus one draw.
func BenchmarkDrawM1(b *testing.B) {
	h, snap := benchSnapshot(b)
	present := everyThird(h)
	pools := NewPools(BranchPresentFirst, snap.Eligible(func(a cip11.Address) bool { return present[a] }))
	csb := benchBeaconSeed()
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
	csb := benchBeaconSeed()
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
