package selection

import (
	"encoding/binary"
	"math/bits"

	"github.com/cip11/cip11"
	"golang.org/x/crypto/sha3"
)

// WeightedDraw is the normative §9.2 weighted_draw, written exactly as steps
// 1–7 read, for vectors and as the reference the fast committee loop is
// checked against:
//
//  2. total_weight = sum(weights) as u128 (saturating, DECISIONS D3);
//  3. empty pool or total 0 ⇒ None (ok = false);
//  4. h = keccak256(seed ‖ i_le8) with the global iteration i;
//  5. ticket = u128(u64_le(h[0..8])) % total_weight;
//  6. walk weights in pool order, subtracting each passed weight;
//  7. return the first j with ticket < weights[j].
//
// Step 1 (pairing of weights with runners) is the caller's duty: weights[j]
// belongs to pool[j].
func WeightedDraw(weights []cip11.U128, seed cip11.Hash, i uint64) (j int, ok bool) {
	total := cip11.U128{}
	for _, w := range weights {
		total = total.AddSat(w)
	}
	if total.IsZero() {
		return 0, false
	}
	ticket := total.ModOf64(drawTicket(seed, i))
	for j, w := range weights {
		if ticket.Less(w) {
			return j, true
		}
		ticket = ticket.Sub(w)
	}
	return 0, false // unreachable: ticket < total ≤ Σ weights
}

// drawTicket returns u64::from_le_bytes(keccak256(seed ‖ i_le8)[0..8]) (§9.2 steps 4–5).
func drawTicket(seed cip11.Hash, i uint64) uint64 {
	var buf [40]byte
	copy(buf[:32], seed[:])
	binary.LittleEndian.PutUint64(buf[32:], i)
	var h [32]byte
	d := sha3.NewLegacyKeccak256()
	d.Write(buf[:])
	d.Sum(h[:0])
	return binary.LittleEndian.Uint64(h[:8])
}

// sum192 is an exact (non-saturating) sum of u128 weights: a 192-bit
// accumulator. Clamping it to 2^128−1 gives the §9.2 step-2 saturating
// total, and it can be updated by removal without losing exactness.
type sum192 struct{ hi, mid, lo uint64 }

func (s *sum192) add(w cip11.U128) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, w.Lo, 0)
	s.mid, c = bits.Add64(s.mid, w.Hi, c)
	s.hi += c
}

func (s *sum192) sub(w cip11.U128) {
	var b uint64
	s.lo, b = bits.Sub64(s.lo, w.Lo, 0)
	s.mid, b = bits.Sub64(s.mid, w.Hi, b)
	s.hi -= b
}

func (s sum192) clamp() cip11.U128 {
	if s.hi != 0 {
		return cip11.MaxU128()
	}
	return cip11.U128{Hi: s.mid, Lo: s.lo}
}
