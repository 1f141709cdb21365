package selection

import (
	"testing"

	"github.com/cip11/cip11"
)

// TestWeightedDrawNone: §9.2 step 3 — an empty pool or zero total is None.
func TestWeightedDrawNone(t *testing.T) {
	var seed cip11.Hash
	if _, ok := WeightedDraw(nil, seed, 0); ok {
		t.Fatal("empty pool drew")
	}
	if _, ok := WeightedDraw([]cip11.U128{{}, {}}, seed, 0); ok {
		t.Fatal("zero total drew")
	}
}

// TestWeightedDrawSingle: a lone non-zero weight always wins; zero weights
// before it are walked past (ticket < 0 is impossible).
func TestWeightedDrawSingle(t *testing.T) {
	var seed cip11.Hash
	for i := uint64(0); i < 50; i++ {
		j, ok := WeightedDraw([]cip11.U128{{}, {}, cip11.U128From64(7), {}}, seed, i)
		if !ok || j != 2 {
			t.Fatalf("i=%d: got %d,%v", i, j, ok)
		}
	}
}

// TestDrawTicketFrozen pins §9.2 steps 4–5: keccak256(0^32 ‖ i_le8=0) is
// daa77426c30c02a4…, whose first 8 bytes read little-endian are the ticket.
func TestDrawTicketFrozen(t *testing.T) {
	var seed cip11.Hash
	if h := cip11.Keccak256(make([]byte, 40)); h.String() != "daa77426c30c02a43d9fba4e841a6556c524d47030762eb14dc4af897e605d9b" {
		t.Fatalf("keccak256(40 zero bytes) = %s", h)
	}
	if got := drawTicket(seed, 0); got != 11818022404476938202 { // 0xa4020cc32674a7da
		t.Fatalf("ticket %d", got)
	}
	// 11818022404476938202 mod 2700 = 1602 ≥ 1000 + 200 (A, B) ⇒ C (hand-checked).
	A, B, C := cip11.U128From64(1000), cip11.U128From64(200), cip11.U128From64(1500)
	if j, ok := WeightedDraw([]cip11.U128{A, B, C}, seed, 0); !ok || j != 2 {
		t.Fatalf("draw = %d,%v want 2", j, ok)
	}
}

// TestWeightedDrawPoolOrderWhenHuge documents DECISIONS D19: when the total
// exceeds 2^64 the u64 ticket never passes a first weight ≥ 2^64, so the
// first pool entry always wins regardless of the others' stake.
func TestWeightedDrawPoolOrderWhenHuge(t *testing.T) {
	big := cip11.U128{Hi: 1} // 2^64
	huge := cip11.U128{Hi: 1000}
	var seed cip11.Hash
	for i := uint64(0); i < 200; i++ {
		seed[0] = byte(i)
		if j, _ := WeightedDraw([]cip11.U128{big, huge, huge}, seed, i); j != 0 {
			t.Fatalf("i=%d: drew %d; a u64 ticket cannot pass a 2^64 weight", i, j)
		}
	}
}
