package seed

import "errors"

// Errors for seeds and beacons (§9.2). Every error this package returns wraps
// exactly one of these sentinels or, for a ConsumedSeedsV1 that is not in
// the §12.6 deterministic-CBOR profile, one of package internal/dcbor's,
// with context added by %w.
var (
	// ErrUnknownSeedScheme: scheme_id_u8 is neither 0x01 (MinSig) nor 0x02 (MinPk).
	ErrUnknownSeedScheme = errors.New("seed: unknown seed scheme_id")
	// ErrSeedSignatureLength: the signature is not exactly the length its
	// scheme requires (48 bytes for MinSig, 96 for MinPk).
	ErrSeedSignatureLength = errors.New("seed: wrong seed signature length")
	// ErrUnknownSelectionMode: the v3 selection mode byte is neither 0x00 nor 0x01.
	ErrUnknownSelectionMode = errors.New("seed: unknown selection mode byte")
	// ErrCommitteeSize: a committee size M of zero has no selection mode.
	ErrCommitteeSize = errors.New("seed: committee size must be at least 1")
	// ErrNoGenesisBeacon: CIP-11 selection is active but the chain
	// configuration defines no genesis beacon.
	ErrNoGenesisBeacon = errors.New("seed: no genesis beacon configured")
)

// Errors for BLS12-381 MinSig seed verification (§9.2, DECISIONS D12).
var (
	// ErrPublicKeyLength: the threshold public key is not exactly 96 bytes.
	ErrPublicKeyLength = errors.New("seed: threshold public key is not 96 bytes")
	// ErrPublicKeyEncoding: the public key is not a canonical compressed G2
	// encoding (flag bits, or a coordinate not below the field modulus).
	ErrPublicKeyEncoding = errors.New("seed: malformed compressed G2 public key")
	// ErrPublicKeyNotOnCurve: the public key's x-coordinate has no point on the curve.
	ErrPublicKeyNotOnCurve = errors.New("seed: public key is not on the curve")
	// ErrPublicKeyInfinity: the public key is the point at infinity.
	ErrPublicKeyInfinity = errors.New("seed: public key is the point at infinity")
	// ErrPublicKeyNotInSubgroup: the public key is on the curve but outside G2.
	ErrPublicKeyNotInSubgroup = errors.New("seed: public key is not in the G2 subgroup")
	// ErrSignatureEncoding: the signature is not a canonical compressed G1
	// encoding (flag bits, or a coordinate not below the field modulus).
	ErrSignatureEncoding = errors.New("seed: malformed compressed G1 signature")
	// ErrSignatureNotOnCurve: the signature's x-coordinate has no point on the curve.
	ErrSignatureNotOnCurve = errors.New("seed: signature is not on the curve")
	// ErrSignatureInfinity: the signature is the point at infinity.
	ErrSignatureInfinity = errors.New("seed: signature is the point at infinity")
	// ErrSignatureNotInSubgroup: the signature is on the curve but outside G1.
	ErrSignatureNotInSubgroup = errors.New("seed: signature is not in the G1 subgroup")
	// ErrSeedSignatureInvalid: a well-formed signature that does not verify
	// for this namespace, round and public key.
	ErrSeedSignatureInvalid = errors.New("seed: seed signature does not verify")
	// ErrSecretKey: a secret key is zero or not below the group order.
	ErrSecretKey = errors.New("seed: invalid secret key")
)

// Errors for consensus-owned round arithmetic (§9.2, DECISIONS D13).
var (
	// ErrRoundOverflow: advancing the round would overflow a u64 epoch.
	ErrRoundOverflow = errors.New("seed: round arithmetic overflows")
	// ErrRoundOutsideSchedule: the round is not a view of the epoch schedule.
	ErrRoundOutsideSchedule = errors.New("seed: round is outside the epoch schedule")
	// ErrInvalidSchedule: the epoch schedule has zero views per epoch.
	ErrInvalidSchedule = errors.New("seed: invalid epoch schedule")
	// ErrAdvanceRoundRegressed: the injected advance_round returned a round not
	// after its input although k > 0.
	ErrAdvanceRoundRegressed = errors.New("seed: advance_round did not move forward")
)

// Errors for the ConsumedSeedsV1 ordering rules (§9.2, DECISIONS D11). A
// deterministic-CBOR profile defect (§12.6, D9) wraps its sentinel of
// package internal/dcbor instead.
var (
	// ErrConsumedSeedsUnsorted: entries are not ascending by (seed_epoch, seed_view).
	ErrConsumedSeedsUnsorted = errors.New("seed: ConsumedSeedsV1 entries not sorted by round")
	// ErrConsumedSeedsDuplicateRound: two entries name the same round.
	ErrConsumedSeedsDuplicateRound = errors.New("seed: ConsumedSeedsV1 has two entries for one round")
	// ErrConsumedSeedsConflict: two candidate entries for one round carry
	// different signatures (at most one can be the round's unique seed).
	ErrConsumedSeedsConflict = errors.New("seed: conflicting signatures for one seed round")
)

// Errors for the ConsumedSeedsV1 block-validity rules (§9.2 "Consumed-seed
// commitment").
var (
	// ErrConsumedSeedMissing: a processed pending record's seed round has no entry.
	ErrConsumedSeedMissing = errors.New("seed: consumed seed round has no ConsumedSeedsV1 entry")
	// ErrConsumedSeedUnused: an entry that no processed pending record consumes.
	ErrConsumedSeedUnused = errors.New("seed: ConsumedSeedsV1 entry consumed by no processed record")
	// ErrConsumedSeedUnverified: an entry does not verify as the threshold seed
	// of its round under its epoch's threshold public key.
	ErrConsumedSeedUnverified = errors.New("seed: ConsumedSeedsV1 entry does not verify")
	// ErrNoThresholdKey: no threshold public key is known for the epoch.
	ErrNoThresholdKey = errors.New("seed: no threshold public key for epoch")
)
