package cip11

import (
	"encoding/hex"
	"errors"
	"fmt"

	"golang.org/x/crypto/sha3"
)

// Address is a 20-byte Cowboy account / runner address (§3.3 "Runner identity").
type Address [20]byte

// Hash is a 32-byte Keccak-256 digest.
type Hash [32]byte

// ErrHexLength is returned when a hex string decodes to the wrong number of bytes.
var ErrHexLength = errors.New("cip11: wrong hex length")

// String returns the lowercase hex form without 0x (DECISIONS D18).
func (a Address) String() string { return hex.EncodeToString(a[:]) }

// String returns the lowercase hex form without 0x (DECISIONS D18).
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText encodes the address as lowercase hex.
func (a Address) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText decodes exactly 40 hex digits.
func (a *Address) UnmarshalText(b []byte) error { return decodeFixed(a[:], b) }

// MarshalText encodes the hash as lowercase hex.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText decodes exactly 64 hex digits.
func (h *Hash) UnmarshalText(b []byte) error { return decodeFixed(h[:], b) }

func decodeFixed(dst, src []byte) error {
	if len(src) != 2*len(dst) {
		return fmt.Errorf("%w: want %d hex digits, got %d", ErrHexLength, 2*len(dst), len(src))
	}
	_, err := hex.Decode(dst, src)
	return err
}

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
