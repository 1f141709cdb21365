package cip11

import (
	"encoding/binary"
	"math/bits"

	"github.com/holiman/uint256"

	"github.com/cip11/cip11/internal/textform"
)

// U128 is an unsigned 128-bit integer, the spec's `u128` for stakes and
// weights (§9.2, §9.3). Arithmetic on it saturates at 2^128−1 (DECISIONS D3),
// mirroring the spec's explicit saturating_mul. The zero value is 0.
type U128 struct{ Hi, Lo uint64 }

// MaxU128 returns 2^128−1, the saturation ceiling of every u128 sum and product.
func MaxU128() U128 { return U128{Hi: ^uint64(0), Lo: ^uint64(0)} }

// U128From64 widens v.
func U128From64(v uint64) U128 { return U128{Lo: v} }

// IsZero reports whether u == 0.
func (u U128) IsZero() bool { return u.Hi|u.Lo == 0 }

// Cmp returns -1, 0 or +1.
func (u U128) Cmp(v U128) int {
	switch {
	case u.Hi < v.Hi || (u.Hi == v.Hi && u.Lo < v.Lo):
		return -1
	case u == v:
		return 0
	}
	return 1
}

// Less reports u < v.
func (u U128) Less(v U128) bool { return u.Hi < v.Hi || (u.Hi == v.Hi && u.Lo < v.Lo) }

// AddSat returns min(u+v, 2^128−1).
func (u U128) AddSat(v U128) U128 {
	lo, c := bits.Add64(u.Lo, v.Lo, 0)
	hi, c := bits.Add64(u.Hi, v.Hi, c)
	if c != 0 {
		return MaxU128()
	}
	return U128{hi, lo}
}

// Sub returns u−v; the caller guarantees v ≤ u.
func (u U128) Sub(v U128) U128 {
	lo, b := bits.Sub64(u.Lo, v.Lo, 0)
	hi, _ := bits.Sub64(u.Hi, v.Hi, b)
	return U128{hi, lo}
}

// MulSat64 returns min(u·m, 2^128−1) — the spec's `saturating_mul` (§9.3).
func (u U128) MulSat64(m uint64) U128 {
	hiLo, lo := bits.Mul64(u.Lo, m)
	hiHi, hiLoPart := bits.Mul64(u.Hi, m)
	hi, c := bits.Add64(hiLoPart, hiLo, 0)
	if hiHi != 0 || c != 0 {
		return MaxU128()
	}
	return U128{hi, lo}
}

// Mod64 returns v mod u as a U128 (v is a u64 ticket, §9.2 step 5); u ≠ 0.
func (u U128) ModOf64(v uint64) U128 {
	if u.Hi != 0 {
		return U128{Lo: v} // v < 2^64 ≤ u
	}
	return U128{Lo: v % u.Lo}
}

// PutBE16 writes u as 16 big-endian bytes (the spec's `_u128_be`).
func (u U128) PutBE16(b []byte) {
	binary.BigEndian.PutUint64(b[0:8], u.Hi)
	binary.BigEndian.PutUint64(b[8:16], u.Lo)
}

// BE16 returns u as 16 big-endian bytes.
func (u U128) BE16() [16]byte {
	var b [16]byte
	u.PutBE16(b[:])
	return b
}

// Uint256 widens u for 256-bit intermediate products (DECISIONS D3).
func (u U128) Uint256() *uint256.Int {
	return &uint256.Int{u.Lo, u.Hi, 0, 0}
}

// U128FromUint256Sat narrows x, saturating at 2^128−1.
func U128FromUint256Sat(x *uint256.Int) U128 {
	if x[2]|x[3] != 0 {
		return MaxU128()
	}
	return U128{Hi: x[1], Lo: x[0]}
}

// String formats u in decimal (DECISIONS D18: u128 values are decimal strings).
func (u U128) String() string { return textform.FormatU128(u.Hi, u.Lo) }

// ParseU128 parses a canonical D18 decimal u128 (no sign, no leading zeros,
// below 2^128); errors wrap the sentinels of package internal/textform.
func ParseU128(s string) (U128, error) {
	hi, lo, err := textform.ParseU128(s)
	return U128{Hi: hi, Lo: lo}, err
}

// MarshalText encodes u as a decimal string.
func (u U128) MarshalText() ([]byte, error) { return textform.AppendU128(nil, u.Hi, u.Lo), nil }

// UnmarshalText parses a canonical decimal string; on error u is unchanged.
func (u *U128) UnmarshalText(b []byte) error {
	hi, lo, err := textform.ParseU128(b)
	if err != nil {
		return err
	}
	*u = U128{Hi: hi, Lo: lo}
	return nil
}
