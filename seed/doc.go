// Package seed implements the consensus-seed side of CIP-11 §9.2 "Selection
// Algorithm": the randomness that runner selection consumes.
//
//   - [Round] is commonware's Seed.round = (epoch, view) (§3.2), ordered by
//     (epoch, view). Round arithmetic is consensus-owned: [AdvanceRound] is
//     injected (DECISIONS D13); [FixedSchedule] is a test/devnet schedule.
//   - [BeaconHashV1] is canonical_seed_bytes = beacon_hash_v1 (§9.2); the
//     v3 selection seed is [SelectionSeedV3], and [Hasher] computes both
//     without allocating on the per-job hot path.
//   - [Verifier] checks a BLS12-381 MinSig threshold seed signature over
//     commonware's seed message ([SeedMessage], DECISIONS D12). Seeds must be
//     verified, and their round checked, before they are hashed (§9.2).
//   - [ParentBeacon] and [CheckGenesisBeacon] implement the M == 1 genesis
//     bootstrapping rule (§9.2).
//   - [ConsumedSeedsV1] is the block field committing every M > 1 seed a
//     block consumes (§9.2 "Consumed-seed commitment", DECISIONS D11), with a
//     strict codec in the §12.6 deterministic-CBOR profile (D9) of package
//     internal/dcbor, and the three block-validity rules
//     ([ValidateConsumedSeeds]) over an injected [ThresholdKeys].
//   - Threshold seeds (DECISIONS D31): [Threshold] gives t for n validators;
//     [SignPartial] signs the seed message with a [Share], [VerifyPartial]
//     checks it against the index's public share, and [RecoverVerified] /
//     [Recover] interpolate t partials at 0 into the group signature that
//     [VerifySeed] accepts under the group key. [DealShares] is a
//     devnet/test dealer (§5.4: production key generation is consensus-owned).
//
// The package is pure: no I/O, no clock, no goroutines, no mutable
// globals and no randomness except the reader injected into [DealShares].
// Every error wraps one exported sentinel — this package's, or for a
// ConsumedSeedsV1 outside the CBOR profile, internal/dcbor's; no input
// panics.
package seed
