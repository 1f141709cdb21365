package blockheader

import "errors"

// Decoding and encoding errors. A §12.6 profile defect wraps a sentinel of
// package internal/dcbor instead (DECISIONS D9), and ConsumedSeedsV1
// entries out of order wrap seed.ErrConsumedSeedsUnsorted or
// seed.ErrConsumedSeedsDuplicateRound.
var (
	// ErrNotHeader: the bytes do not start with the header magic "C11H"
	// (a node transaction, or fewer than 4 bytes).
	ErrNotHeader = errors.New("blockheader: not a CIP-11 block header (magic)")
	// ErrHeaderTooLarge: the header is longer than [MaxHeaderBytes].
	ErrHeaderTooLarge = errors.New("blockheader: header too large")
	// ErrHeaderVersion: the header version is not [Version].
	ErrHeaderVersion = errors.New("blockheader: unsupported header version")
	// ErrPresenceTooLong: the presence field is longer than [MaxPresenceBytes].
	ErrPresenceTooLong = errors.New("blockheader: presence field too long")
	// ErrNilHeader: a nil *Header was passed.
	ErrNilHeader = errors.New("blockheader: nil header")
)

// Placement errors of [Check] (DECISIONS D22, D30, D32; §9.2).
var (
	// ErrZeroHeight: the block height is 0 (heights start at 1).
	ErrZeroHeight = errors.New("blockheader: block height 0")
	// ErrRoundView: the proposal round's view is not the block height (D30).
	ErrRoundView = errors.New("blockheader: proposal round view is not the block height")
	// ErrBeaconMissing: a block above height 1 carries no parent beacon.
	ErrBeaconMissing = errors.New("blockheader: parent beacon missing above height 1")
	// ErrBeaconUnexpected: block 1 carries a parent beacon (its parent is
	// genesis, which has no certified round).
	ErrBeaconUnexpected = errors.New("blockheader: parent beacon at height 1")
	// ErrBeaconRound: the parent beacon is not of the parent's round: its
	// view is not h−1, or its epoch is after the proposal round's (D30).
	ErrBeaconRound = errors.New("blockheader: parent beacon is not of the parent round")
	// ErrFinalized: finalized is not h−1 (0 at height 1).
	ErrFinalized = errors.New("blockheader: finalized height is not h−1")
	// ErrSeedRound: a consumed seed's round is not before the proposal
	// round, so no seed for it can exist yet (§9.2, D30–D31).
	ErrSeedRound = errors.New("blockheader: consumed seed round not before the proposal round")
)

// Schedule errors of [CheckSchedule] (§9.2 "R.round equals the expected
// absolute seed round", DECISIONS D30, D31; SPEC-NOTES H4, C4).
var (
	// ErrHeightUnscheduled: the chain's height schedule cannot map the
	// block height (or, for the parent beacon, height−1): it is before the
	// schedule's first activation or after its known_through, so the epoch
	// active there is not known (final) yet.
	ErrHeightUnscheduled = errors.New("blockheader: height outside the chain's height schedule")
	// ErrRoundEpoch: the proposal round's epoch is not epoch_at(h), the
	// epoch the height schedule has active at the block height (D30).
	ErrRoundEpoch = errors.New("blockheader: proposal round epoch is not the epoch active at the height")
	// ErrBeaconEpoch: the parent beacon's epoch is not epoch_at(h−1): it
	// is not the seed of the parent's round Round(epoch_at(h−1), h−1)
	// (§9.2, D30, D31) — for example the seed of Round(E, h−1) signed with
	// a retired epoch E's key after E+1 activated at or before h−1.
	ErrBeaconEpoch = errors.New("blockheader: parent beacon epoch is not the epoch active at the parent height")
)
