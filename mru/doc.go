// Package mru implements CIP-11's most-recently-used runner state (§9.3–§9.4):
// the mru_key record written by the Result Verifier and read by the
// dispatcher for the iteration-0 weight multiplier.
//
//	mru_key(submitter, job_kind) → MruRecord { runner_address, set_at_block }
//	key   = "cip11:mru:v1" ‖ submitter_20 ‖ job_kind_u8          (DECISIONS D15)
//	value = runner_address_20 ‖ set_at_block_be8                   (28 bytes)
//
// job_kind is the CIP-11-owned stable byte table of [JobKind] (§9.4), never a
// source-order enum discriminant.
//
// Read path: [Lookup] is lookup_mru (§9.3) — Some only if the record exists
// and H −(saturating) set_at_block ≤ MRU_TTL_BLOCKS. Write path: [Winner]
// picks the first consensus-matching runner in stored committee order that is
// in neither runners_to_slash nor runners_unrewarded, and [RecordResult]
// writes { winner, H }. Both are gated on MRU_ACTIVATION_HEIGHT (§9.4): below
// it nothing is read and nothing is written, so state and the draw are
// byte-identical to a chain without MRU.
//
// Storage enters through the small [Reader] and [Writer] interfaces; [KVStore]
// implements both over any byte-keyed store using the D15 layout, and
// [NewMemStore] is the in-memory reference.
//
// The package is pure: no I/O, no clock, no goroutines, no globals besides
// its sentinel errors.
package mru
