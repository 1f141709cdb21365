// Package merkle computes candidates_snapshot_root, the binary Merkle root
// over a job's block-T selection snapshot (CIP-11 §9.2, "candidates_snapshot_root
// (normative)"). The root is committed in PendingSelectionV1 at block S and
// re-derived and compared byte for byte at the pending-selection pass.
//
// The tree, exactly as §9.2 defines it (all integers big-endian, DECISIONS D2;
// keccak256 is Ethereum's Keccak-256, D1):
//
//	leaf_i = keccak256("cowboy-candidates-leaf-v1" ‖ index_be4 ‖ runner_address_20
//	                   ‖ effective_stake_u128_be16 ‖ selection_reputation_x1e9_u64_be8
//	                   ‖ base_weight_u128_be16)
//	inner  = keccak256("cowboy-candidates-inner-v1" ‖ left_32 ‖ right_32)
//	empty  = keccak256("cowboy-candidates-empty-v1")
//
// A one-leaf tree's root is that leaf. A level with an odd number of nodes
// duplicates its final node before the next level is hashed. No other arity,
// padding or promotion rule exists.
//
// [Root] is the fast implementation: one reused Keccak state and one node
// buffer hashed in place. Its tests check it against a deliberately naive
// reference (level lists, fresh hashers) over random snapshots.
//
// The package is pure: no I/O, no clock, no goroutines, no globals.
package merkle
