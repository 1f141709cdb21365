package selection

import (
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/holiman/uint256"
	"pgregory.net/rapid"
)

func u128(s string) cip11.U128 {
	v, err := cip11.ParseU128(s)
	if err != nil {
		panic(err)
	}
	return v
}

// TestBaseWeightFrozen pins §9.3 values computed by hand.
func TestBaseWeightFrozen(t *testing.T) {
	max := "340282366920938463463374607431768211455" // 2^128−1
	cases := []struct {
		name             string
		stake            string
		rep, norm, floor uint64
		want             string
	}{
		{"factor one", "1000", 1_000_000_000, 1, 100_000, "1000"},
		{"factor half", "1000", 250_000_000, 1, 100_000, "500"},
		{"below floor", "1000", 100_000, 1, 100_000, "100"}, // isqrt(1e8)=1e4 < 1e5
		{"zero reputation hits floor", "1000", 0, 1, 100_000, "100"},
		{"isqrt truncates", "1000000", 2_000_000_000, 1, 100_000, "1414213"}, // isqrt(2e12)=1414213
		{"normalizer 100", "1000", 100_000_000_000, 100, 100_000, "1000"},
		{"division truncates", "7", 250_000_000, 1, 100_000, "3"}, // 7·500000/1e6 = 3.5
		{"max stake factor one", max, 1_000_000_000, 1, 100_000, max},
		{"just below saturation", "170141183460469231731687303715884105727", 4_000_000_000, 1, 100_000,
			"340282366920938463463374607431768211454"}, // (2^127−1)·2
		{"saturates", "170141183460469231731687303715884105728", 4_000_000_000, 1, 100_000, max}, // 2^127·2
		{"max reputation", "1", ^uint64(0), 1, 0, "135818"},                                      // isqrt((2^64−1)·1e3) = 135818791312 ⇒ /1e6
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := BaseWeight(u128(c.stake), c.rep, c.norm, c.floor)
			if err != nil {
				t.Fatal(err)
			}
			if got != u128(c.want) {
				t.Fatalf("got %s want %s", got, c.want)
			}
		})
	}
}

func TestBaseWeightZeroNormalizer(t *testing.T) {
	if _, err := BaseWeight(u128("1"), 1, 0, 0); !errors.Is(err, ErrZeroNormalizer) {
		t.Fatalf("got %v", err)
	}
}

// TestISqrtExact checks the integer square root the weight relies on (D3):
// r = ⌊√x⌋ iff r² ≤ x < (r+1)².
func TestISqrtExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := uint256.NewInt(rapid.Uint64().Draw(t, "hi"))
		x.Lsh(x, uint(rapid.IntRange(0, 64).Draw(t, "shift")))
		x.Add(x, uint256.NewInt(rapid.Uint64().Draw(t, "lo")))
		r := new(uint256.Int).Sqrt(x)
		sq := new(uint256.Int).Mul(r, r)
		r1 := new(uint256.Int).AddUint64(r, 1)
		sq1 := new(uint256.Int).Mul(r1, r1)
		if sq.Gt(x) || !sq1.Gt(x) {
			t.Fatalf("isqrt(%s) = %s", x.Dec(), r.Dec())
		}
	})
}
