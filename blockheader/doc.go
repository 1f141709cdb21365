// Package blockheader is the CIP-11 block context of a block on CometBFT
// (DECISIONS D32): the block's first transaction, carrying what §17 calls the
// block execution context — the proposal round, the parent beacon
// R_{H−1}, the finalized height, and the committed PresenceInputV1 (§7.2)
// and ConsumedSeedsV1 (§9.2) fields. The block hash covers it because it is
// a transaction (§17: in the block digest, not an excluded field).
//
// Encoding (SPEC-NOTES H1–H4). A header is the 4 ASCII bytes "C11H" followed
// by exactly one item of the §12.6 deterministic CBOR profile (package
// internal/dcbor, DECISIONS D7–D9): a map whose keys are the fields'
// declaration positions, every field present, an absent option null:
//
//	{0: version (1),
//	 1: round {0: epoch, 1: view},
//	 2: parent_beacon {0: epoch, 1: view, 2: signature (48 bytes)} or null,
//	 3: finalized (u64; 0 = none),
//	 4: presence (PresenceInputV1 bytes) or null,
//	 5: consumed_seeds (the ConsumedSeedsV1 array itself, D11)}
//
// The magic separates a header from a devnet transaction ("C11T…"), since
// CometBFT hands the application raw transaction bytes. [Decode] is strict:
// it accepts exactly the bytes [Encode] produces for the decoded value, and
// every defect wraps one exported sentinel — this package's for the magic,
// the size bounds, the version and the field bounds; package
// internal/dcbor's for a §12.6 profile defect (non-shortest integers,
// trailing bytes, a missing key, …); package seed's for ConsumedSeedsV1
// entries out of order.
//
// [Check] applies the placement rules that need no state (finalized = h−1,
// a parent beacon iff h > 1, the D30 round/view rules). Verifying the parent
// beacon and the consumed seeds against the threshold key, and decoding the
// presence field against registry(H−1), need chain state and are the
// application's. The package is pure: no I/O, no clock, no globals.
package blockheader
