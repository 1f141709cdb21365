package pebble

import (
	"testing"

	pdb "github.com/cockroachdb/pebble/v2"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
)

const benchRunners = 5000

// benchStore registers 5,000 runners at block 1 and updates every one at
// blocks 2..3, so the view of block 1 must skip two newer versions per runner.
func benchStore(b *testing.B) *Store {
	s := mustOpen(b, b.TempDir(), Options{Sync: SyncNever})
	for h := uint64(1); h <= 3; h++ {
		must(b, s.Begin(h))
		for i := range benchRunners {
			a := cip11.Address{byte(i >> 8), byte(i), 1}
			r := state.Runner{Address: a, LastHeartbeat: h, Stake: cip11.U128From64(uint64(i))}
			if h == 1 {
				must(b, s.Registrar().Register(r))
			} else {
				must(b, s.Registrar().Update(r))
			}
		}
		must(b, s.Commit())
	}
	must(b, s.db.Flush())
	return s
}

// BenchmarkHistoricalView compares a past-height (block 1) view over 5,000
// runners with a bare pebble iteration over the same runner keys.
func BenchmarkHistoricalView(b *testing.B) {
	s := benchStore(b)
	defer s.Close()
	bare := func(b *testing.B, all bool) {
		snap := s.db.NewSnapshot()
		defer snap.Close()
		for b.Loop() {
			it, err := snap.NewIter(&pdb.IterOptions{LowerBound: []byte(pfxRunner), UpperBound: prefixEnd([]byte(pfxRunner))})
			must(b, err)
			n := 0
			for ok := it.First(); ok; ok = it.Next() {
				if _, err := it.ValueAndErr(); err != nil {
					b.Fatal(err)
				}
				n++
				if !all {
					break
				}
			}
			must(b, it.Close())
			if all && n != 3*benchRunners {
				b.Fatal(n)
			}
		}
	}
	view := func(b *testing.B, all bool) {
		for b.Loop() {
			v, err := s.At(1)
			must(b, err)
			n := 0
			for r := range v.ByAddress() {
				if r.LastHeartbeat != 1 {
					b.Fatal(r)
				}
				n++
				if !all {
					break
				}
			}
			if err := v.Err(); err != nil || (all && n != benchRunners) {
				b.Fatal(n, err)
			}
		}
	}
	b.Run("FirstRunner/View", func(b *testing.B) { view(b, false) })
	b.Run("FirstRunner/Bare", func(b *testing.B) { bare(b, false) })
	b.Run("Full/View", func(b *testing.B) { view(b, true) })
	b.Run("Full/Bare", func(b *testing.B) { bare(b, true) })
}
