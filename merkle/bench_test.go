package merkle

import (
	"hash"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"golang.org/x/crypto/sha3"
)

// keccakCalls returns the number of Keccak calls Root makes for n leaves:
// n leaf hashes plus ceil(m/2) inner hashes on every level m > 1.
func keccakCalls(n int) (leaves, inners int) {
	for m := n; m > 1; m = (m + 1) / 2 {
		inners += (m + 1) / 2
	}
	return n, inners
}

func TestKeccakCalls5000(t *testing.T) {
	if l, i := keccakCalls(5000); l != 5000 || i != 5005 {
		t.Fatalf("keccakCalls(5000) = %d + %d, want 5000 + 5005", l, i)
	}
}

// BenchmarkRoot5000 measures Root over a 5,000-candidate snapshot
// (§6.6 scale); compare with BenchmarkKeccakBaseline.
func BenchmarkRoot5000(b *testing.B) {
	ls := fixtures(5000)
	b.ReportAllocs()
	for b.Loop() {
		Root(ls)
	}
}

// BenchmarkKeccakBaseline performs the same 10,005 Keccak-256 calls Root
// makes for 5,000 leaves (5,000 of 89 bytes, 5,005 of 90 bytes) with the same
// Reset/Write/Sum hasher reuse, and nothing else: the floor Root is held to.
func BenchmarkKeccakBaseline(b *testing.B) {
	base := newBaseline(5000)
	b.ReportAllocs()
	for b.Loop() {
		base.run()
	}
}

// BenchmarkRootVsBaseline5000 alternates one Root and one baseline pass per
// iteration and reports their time ratio, so load from other processes on a
// shared machine affects both sides alike. The target is root/keccak ≤ 1.3.
func BenchmarkRootVsBaseline5000(b *testing.B) {
	ls := fixtures(5000)
	base := newBaseline(5000)
	var tRoot, tBase time.Duration
	for b.Loop() {
		t0 := time.Now()
		Root(ls)
		t1 := time.Now()
		base.run()
		tRoot, tBase = tRoot+t1.Sub(t0), tBase+time.Since(t1)
	}
	b.ReportMetric(float64(tRoot)/float64(tBase), "root/keccak")
}

// baseline is the bare Keccak work of Root: as many calls, of the same
// sizes, through one reused state.
type baseline struct {
	leaves, inners int
	leafIn         [leafLen]byte
	innerIn        [innerLen]byte
	d              hash.Hash
	out            cip11.Hash
}

func newBaseline(n int) *baseline {
	l, i := keccakCalls(n)
	return &baseline{leaves: l, inners: i, d: sha3.NewLegacyKeccak256()}
}

func (x *baseline) run() {
	for i := 0; i < x.leaves; i++ {
		x.leafIn[0] = byte(i)
		x.d.Reset()
		x.d.Write(x.leafIn[:])
		x.d.Sum(x.out[:0])
	}
	for i := 0; i < x.inners; i++ {
		x.innerIn[0] = byte(i)
		x.d.Reset()
		x.d.Write(x.innerIn[:])
		x.d.Sum(x.out[:0])
	}
}
