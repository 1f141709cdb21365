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
	bare := func(b *testing.B, all bool) { bareIter(b, s, pfxRunner, all, 3*benchRunners) }
	view := func(b *testing.B, all bool) { viewIter(b, s, 1, all) }
	b.Run("FirstRunner/View", func(b *testing.B) { view(b, false) })
	b.Run("FirstRunner/Bare", func(b *testing.B) { bare(b, false) })
	b.Run("Full/View", func(b *testing.B) { view(b, true) })
	b.Run("Full/Bare", func(b *testing.B) { bare(b, true) })
}

// BenchmarkCurrentView is the view of the last committed block (what every
// block's snapshot reads) against a bare iteration of the current family.
func BenchmarkCurrentView(b *testing.B) {
	s := benchStore(b)
	defer s.Close()
	b.Run("FirstRunner/View", func(b *testing.B) { viewIter(b, s, 3, false) })
	b.Run("FirstRunner/Bare", func(b *testing.B) { bareIter(b, s, pfxCur, false, benchRunners) })
	b.Run("Full/View", func(b *testing.B) { viewIter(b, s, 3, true) })
	b.Run("Full/Bare", func(b *testing.B) { bareIter(b, s, pfxCur, true, benchRunners) })
}

func bareIter(b *testing.B, s *Store, pfx string, all bool, want int) {
	{
		snap := s.db.NewSnapshot()
		defer snap.Close()
		for b.Loop() {
			it, err := snap.NewIter(&pdb.IterOptions{LowerBound: []byte(pfx), UpperBound: prefixEnd([]byte(pfx))})
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
			if all && n != want {
				b.Fatal(n)
			}
		}
	}
}

func viewIter(b *testing.B, s *Store, h uint64, all bool) {
	{
		for b.Loop() {
			v, err := s.At(h)
			must(b, err)
			n := 0
			for r := range v.ByAddress() {
				if r.LastHeartbeat != h {
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
}
