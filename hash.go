package cip11

import (
	"golang.org/x/crypto/sha3"

	"github.com/cip11/cip11/internal/textform"
)

// Address is a 20-byte Cowboy account / runner address (§3.3 "Runner identity").
type Address [20]byte

// Hash is a 32-byte Keccak-256 digest.
type Hash [32]byte

// String returns the lowercase hex form without 0x (DECISIONS D18).
func (a Address) String() string { return textform.Hex(a[:]) }

// String returns the lowercase hex form without 0x (DECISIONS D18).
func (h Hash) String() string { return textform.Hex(h[:]) }

// MarshalText encodes the address as lowercase hex.
func (a Address) MarshalText() ([]byte, error) { return textform.AppendHex(nil, a[:]), nil }

// UnmarshalText decodes exactly 40 lowercase hex digits (D18); errors wrap
// the sentinels of package internal/textform (e.g. ErrUppercaseHex,
// ErrHexLength), and on error a is unchanged.
func (a *Address) UnmarshalText(b []byte) error { return textform.ParseHexInto(a[:], b) }

// MarshalText encodes the hash as lowercase hex.
func (h Hash) MarshalText() ([]byte, error) { return textform.AppendHex(nil, h[:]), nil }

// UnmarshalText decodes exactly 64 lowercase hex digits (D18), like
// [Address.UnmarshalText].
func (h *Hash) UnmarshalText(b []byte) error { return textform.ParseHexInto(h[:], b) }

// Keccak256 returns the original (Ethereum) Keccak-256 of the concatenated
// parts — not NIST SHA3-256 (DECISIONS D1).
func Keccak256(parts ...[]byte) Hash {
	d := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		d.Write(p)
	}
	var h Hash
	d.Sum(h[:0])
	return h
}
