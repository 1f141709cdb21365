package merkle

import (
	"encoding/hex"
	"math"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"pgregory.net/rapid"
)

// fixture returns test leaf i. The frozen roots below were computed for these
// leaves by an independent pure-Python Keccak-256 and tree builder, not by
// this package.
func fixture(i int) Leaf {
	var a cip11.Address
	for j := range a {
		a[j] = byte(0x10 * (i + 1))
	}
	rep := uint64(7 * i)
	if i < 10 {
		rep = uint64(1_000_000_000 - i*100_000_000)
	}
	return Leaf{
		Address:        a,
		EffectiveStake: cip11.U128{Hi: uint64(i), Lo: uint64(1000 * (i + 1))},
		ReputationX1e9: rep,
		BaseWeight:     cip11.U128From64(uint64(777 * (i + 1))),
	}
}

func fixtures(n int) []Leaf {
	ls := make([]Leaf, n)
	for i := range ls {
		ls[i] = fixture(i)
	}
	return ls
}

func maxLeaf() Leaf {
	var a cip11.Address
	for j := range a {
		a[j] = 0xff
	}
	return Leaf{Address: a, EffectiveStake: cip11.MaxU128(), ReputationX1e9: math.MaxUint64, BaseWeight: cip11.MaxU128()}
}

func mustHash(t *testing.T, s string) cip11.Hash {
	t.Helper()
	var h cip11.Hash
	if err := h.UnmarshalText([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRootFrozen pins §9.2 roots for 0–9 leaves, u128/u64 maxima and a
// 300-leaf and 5,000-leaf snapshot.
func TestRootFrozen(t *testing.T) {
	cases := []struct {
		name   string
		leaves []Leaf
		want   string
	}{
		{"empty", nil, "d15e504c62e0d8e151bf3d894baa33bcf6779d3f2da34df110a5da3bdbba3795"},
		{"1", fixtures(1), "4a137b5453d1b0b456cac20ed9c49faa0bbff98ab22716444adc5e60dc0a7ee1"},
		{"2", fixtures(2), "51f8c2d57f6fefced7f3389119925c9e0d5632a855dc4b31230a5d18c5da3508"},
		{"3", fixtures(3), "078f30f919c089e98aeebbf5c86b40f00255d36939f9a3ff9a2d48d295a9ebf9"},
		{"4", fixtures(4), "f8128fb2dce0a2abce4d5b9b0c2c1cd32811bceb25593c550e5ab6f114a28fbf"},
		{"5", fixtures(5), "5aa9d4fdbcd1aebd96b21333be8debc02f7b3fb244d6c704ab990100a107cd0a"},
		{"7", fixtures(7), "0a5e1dbc7c1397ec873db1326763a7b4bf1142390fe0589a85e7fe64c606e5ab"},
		{"8", fixtures(8), "d95818e538ad5345ee74537c35e1f98e6f0dc3dd18d1678d59e41b86883daa4c"},
		{"9", fixtures(9), "299dfd9dc1629121a3d5da5fa1e83d653633b685e785e124a4f8bd33b29d2f30"},
		{"max1", []Leaf{maxLeaf()}, "9a9b8537ee2a7496198e6107757030b2fcf30cc8660b3cb0bf3d0df5dbe062db"},
		{"max3", []Leaf{maxLeaf(), fixture(1), maxLeaf()}, "8bdefa5e55713d38aedd99c4df059a3f115dff506781b57b3a16cd4316592449"},
		{"300", fixtures(300), "1e04334db70357ebe668812fd54a050ac9a893566537cbb935f051d0d103ec89"},
		{"5000", fixtures(5000), "d34a4354908dc4524c3ed299f30c86c324c39f21296a6b37b05796e2387ebc81"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, want := Root(c.leaves), mustHash(t, c.want); got != want {
				t.Errorf("Root = %s, want %s", got, want)
			}
		})
	}
}

// TestRootShape checks the §9.2 construction rules directly, each against an
// independent Keccak call: empty root, one leaf is the root, two leaves hash
// once, and an odd level duplicates its final node.
func TestRootShape(t *testing.T) {
	l0 := mustHash(t, "4a137b5453d1b0b456cac20ed9c49faa0bbff98ab22716444adc5e60dc0a7ee1") // leaf_0 of fixture(0)
	if got := Root(fixtures(1)); got != l0 {
		t.Fatalf("one-leaf root %s is not the leaf %s", got, l0)
	}
	if got, want := Root(nil), cip11.Keccak256([]byte("cowboy-candidates-empty-v1")); got != want {
		t.Fatalf("empty root %s, want %s", got, want)
	}
	ls := fixtures(3)
	l1, l2 := leafNaive(1, ls[1]), leafNaive(2, ls[2])
	if got, want := Root(ls[:2]), cip11.Keccak256([]byte("cowboy-candidates-inner-v1"), l0[:], l1[:]); got != want {
		t.Fatalf("two-leaf root %s, want %s", got, want)
	}
	left := innerNaive(l0, l1)
	right := innerNaive(l2, l2) // duplicated final node
	if got, want := Root(ls), innerNaive(left, right); got != want {
		t.Fatalf("three-leaf root %s, want %s", got, want)
	}
}

// TestLeafPreimage pins the 89-byte leaf layout of fixture(1) byte for byte.
func TestLeafPreimage(t *testing.T) {
	h := newHasher()
	h.leaf(1, &Leaf{
		Address:        fixture(1).Address,
		EffectiveStake: cip11.U128{Hi: 1, Lo: 2000},
		ReputationX1e9: 900_000_000,
		BaseWeight:     cip11.U128From64(1554),
	})
	want := "636f77626f792d63616e646964617465732d6c6561662d7631" + // "cowboy-candidates-leaf-v1"
		"00000001" + // index_be4
		"2020202020202020202020202020202020202020" + // runner_address_20
		"000000000000000100000000000007d0" + // effective_stake_u128_be
		"0000000035a4e900" + // selection_reputation_x1e9_u64_be (9e8)
		"00000000000000000000000000000612" // base_weight_u128_be (1554)
	if got := hex.EncodeToString(h.leafB[:]); got != want {
		t.Fatalf("leaf preimage\n got %s\nwant %s", got, want)
	}
}

// TestRootMatchesNaive checks the in-place implementation against the
// reference over random snapshots of 0–300 leaves.
func TestRootMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "n")
		ls := make([]Leaf, n)
		for i := range ls {
			copy(ls[i].Address[:], rapid.SliceOfN(rapid.Byte(), 20, 20).Draw(t, "addr"))
			ls[i].EffectiveStake = cip11.U128{Hi: rapid.Uint64().Draw(t, "sh"), Lo: rapid.Uint64().Draw(t, "sl")}
			ls[i].ReputationX1e9 = rapid.Uint64().Draw(t, "rep")
			ls[i].BaseWeight = cip11.U128{Hi: rapid.Uint64().Draw(t, "wh"), Lo: rapid.Uint64().Draw(t, "wl")}
		}
		if got, want := Root(ls), rootNaive(ls); got != want {
			t.Fatalf("n=%d: Root %s, naive %s", n, got, want)
		}
	})
}

// TestRootDoesNotModifyInput guards the in-place level hashing.
func TestRootDoesNotModifyInput(t *testing.T) {
	ls := fixtures(9)
	before := append([]Leaf(nil), ls...)
	Root(ls)
	for i := range ls {
		if ls[i] != before[i] {
			t.Fatalf("leaf %d modified", i)
		}
	}
}

func TestRootAllocs(t *testing.T) {
	ls := fixtures(5000)
	if n := testing.AllocsPerRun(5, func() { Root(ls) }); n > 3 {
		t.Errorf("Root(5000 leaves) allocates %v times, want ≤ 3 (node buffer, hasher, Keccak state)", n)
	}
}

// TestLevelsJoin: hashing runs whose starts are multiples of 2^k apart and
// folding their concatenated level-k nodes gives Root, for every size up
// to 300 and every k ≤ 5 (the basis of parallel root computation).
func TestLevelsJoin(t *testing.T) {
	all := make([]Leaf, 300)
	for i := range all {
		all[i].Address[0], all[i].Address[1] = byte(i), byte(i>>8)
		all[i].ReputationX1e9 = uint64(i)
	}
	for n := 0; n <= len(all); n++ {
		want := Root(all[:n])
		for k := 0; k <= 5 && n > 1<<k; k++ {
			c := 1 << k
			var nodes []cip11.Hash
			for a := 0; a < n; a += 3 * c { // runs of three subtrees
				b := min(a+3*c, n)
				nodes = append(nodes, Level(all[a:b], uint32(a), k)...)
			}
			if got := Fold(nodes); got != want {
				t.Fatalf("n=%d k=%d: joined root differs", n, k)
			}
		}
	}
}

// TestRunReuseMatchesLevel: a Run built reusing an earlier run of an
// edited list (replaced, inserted and removed leaves) has exactly the top
// level a fresh hash gives, and joined runs give Root.
func TestRunReuseMatchesLevel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mk := func(i int) Leaf {
			var l Leaf
			l.Address[0], l.Address[1] = byte(i), byte(i>>8)
			l.ReputationX1e9 = uint64(i)
			return l
		}
		n := rapid.IntRange(0, 300).Draw(t, "n")
		leaves := make([]Leaf, n)
		for i := range leaves {
			leaves[i] = mk(i)
		}
		k := rapid.IntRange(0, 4).Draw(t, "k")
		prev := NewRun(leaves, 0, k, nil)
		next := slices.Clone(leaves)
		for range rapid.IntRange(0, 6).Draw(t, "edits") {
			switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
			case op == 0 && len(next) > 0:
				next[rapid.IntRange(0, len(next)-1).Draw(t, "at")].ReputationX1e9 ^= 1
			case op == 1:
				next = slices.Insert(next, rapid.IntRange(0, len(next)).Draw(t, "at"), mk(1000+len(next)))
			case op == 2 && len(next) > 0:
				at := rapid.IntRange(0, len(next)-1).Draw(t, "at")
				next = slices.Delete(next, at, at+1)
			}
		}
		got := NewRun(next, 0, k, prev).Top()
		if want := Level(next, 0, k); !slices.Equal(got, want) {
			t.Fatalf("reused run differs (n=%d→%d, k=%d)", n, len(next), k)
		}
		if len(next) > 1<<k && Fold(slices.Clone(got)) != Root(next) {
			t.Fatal("folded run differs from Root")
		}
	})
}
