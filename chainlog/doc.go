// Package chainlog is the versioned, language-neutral chain-log format of
// CIP-11 replay: a JSON Lines stream (optionally gzip-compressed) holding one
// [Header] line with the chain configuration, then one [Block] line per
// block carrying what the CIP-11 dispatcher consumed in that block (round,
// parent beacon, finality, PresenceInputV1, ConsumedSeedsV1, registry
// changes, heartbeats, job submits, verified results) and what it produced
// (assignments, pending records written and consumed, MRU writes, and a
// digest of the CIP-11 state after the block).
//
// The normative description of every field is docs/chainlog.md at the
// repository root. Integers that are u64 or u128 in the protocol are decimal
// strings, byte strings are lowercase hex without 0x (DECISIONS D18); small
// counts and indices are JSON numbers.
//
// Decoding is strict: unknown keys, missing keys, non-canonical decimals,
// uppercase or odd-length hex and wrong byte lengths are rejected with an
// error wrapping [ErrMalformed]; a header naming another format version
// wraps [ErrUnsupportedVersion]. No input makes the decoder panic.
//
// The package is pure: it reads an [io.Reader] and writes an [io.Writer];
// no files, no clock, no globals besides its sentinel errors.
package chainlog
