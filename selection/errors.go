package selection

import "errors"

// Sentinel errors. Those marked block-invalid make the block that caused
// them invalid (§9.2); the others are input errors.
var (
	ErrUnknownBranch = errors.New("selection: unknown branch")
)

// PendingSelectionV1 codec errors (§9.2, DECISIONS D9/D11).
var (
	ErrPendingNotCanonical  = errors.New("selection: PendingSelectionV1 is not canonical deterministic CBOR")
	ErrPendingVersion       = errors.New("selection: PendingSelectionV1 version is not 1")
	ErrPendingStateHeight   = errors.New("selection: PendingSelectionV1 selection_state_height differs from submitted_at")
	ErrPendingCommitteeSize = errors.New("selection: PendingSelectionV1 committee_size below 2")
)

// Block-invalid conditions of §9.2. A block whose execution returns an error
// wrapping one of these is invalid.
var (
	ErrPendingExists        = errors.New("selection: a live pending record for this job_id exists")
	ErrNoLivePending        = errors.New("selection: no live pending record")
	ErrSeedRoundMismatch    = errors.New("selection: seed round differs from the record's committed round")
	ErrSnapshotRootMismatch = errors.New("selection: re-derived candidates_snapshot_root differs from the committed root")
	ErrPresenceRequired     = errors.New("selection: PresenceInputV1 absent or malformed while present-first is active")
	ErrConsumedSeeds        = errors.New("selection: ConsumedSeedsV1 invalid")
	ErrParentBeacon         = errors.New("selection: parent beacon R_{S-1} does not verify")
)

// Job input errors.
var (
	ErrCommitteeSize       = errors.New("selection: committee size must be ≥ 1")
	ErrSeedRoundUnmappable = errors.New("selection: advance_round cannot map r_seed yet")
)

// Store errors.
var (
	ErrDuplicateJob = errors.New("selection: job_id already submitted")
)
