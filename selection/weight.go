package selection

import (
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/holiman/uint256"
)

// ErrZeroNormalizer is returned when ReputationConfig.Normalizer is 0, which
// would divide by zero in the §9.3 scaled term.
var ErrZeroNormalizer = errors.New("selection: reputation normalizer is zero")

// BaseWeight is the CIP-2 v3 §2 weight as §9.3 gives it at Q1e6:
//
//	scaled           = (reputation_x1e9 · 1_000_000²) / (normalizer · 1_000_000_000)
//	sqrt_factor_x1e6 = isqrt(scaled)
//	factor_x1e6      = max(sqrt_factor_x1e6, w_min_floor_x1e6)
//	base_weight      = (effective_stake · factor_x1e6) / 1_000_000
//
// Intermediates are 256-bit; the result saturates at 2^128−1 (DECISIONS D3).
// isqrt is the exact integer floor square root (D3), never floating point.
func BaseWeight(effectiveStake cip11.U128, reputationX1e9, normalizer, wMinFloorX1e6 uint64) (cip11.U128, error) {
	if normalizer == 0 {
		return cip11.U128{}, fmt.Errorf("%w: base_weight", ErrZeroNormalizer)
	}
	var scaled, den uint256.Int
	scaled.Mul(uint256.NewInt(reputationX1e9), uint256.NewInt(1_000_000_000_000))
	den.Mul(uint256.NewInt(normalizer), uint256.NewInt(1_000_000_000))
	scaled.Div(&scaled, &den)
	factor := new(uint256.Int).Sqrt(&scaled)
	if floor := uint256.NewInt(wMinFloorX1e6); factor.Lt(floor) {
		factor = floor
	}
	w := effectiveStake.Uint256()
	w.Mul(w, factor) // < 2^128 · 2^64: no 256-bit overflow
	w.Div(w, uint256.NewInt(1_000_000))
	return cip11.U128FromUint256Sat(w), nil
}
