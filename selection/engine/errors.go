package engine

import "errors"

// Configuration errors, returned by [New].
var (
	// ErrNilDependency: a required Config field is nil.
	ErrNilDependency = errors.New("engine: required dependency is nil")
	// ErrInvalidConfig: the chain parameters or genesis configuration are
	// invalid (wraps the cause, e.g. cip11.ErrInvalidParams).
	ErrInvalidConfig = errors.New("engine: invalid configuration")
)

// Block-invalid conditions of §9.2. A block whose execution returns an error
// wrapping one of these is invalid; its writes must be discarded.
var (
	ErrPendingExists        = errors.New("engine: a live pending record for this job_id exists")
	ErrNoLivePending        = errors.New("engine: no live pending record")
	ErrSeedRoundMismatch    = errors.New("engine: seed round differs from the record's committed round")
	ErrSnapshotRootMismatch = errors.New("engine: re-derived candidates_snapshot_root differs from the committed root")
	ErrConsumedSeeds        = errors.New("engine: ConsumedSeedsV1 invalid")
	ErrParentBeacon         = errors.New("engine: parent beacon R_{H-1} does not verify")
)

// Transaction errors: the block carries a transaction the engine cannot
// apply, which makes the block invalid.
var (
	ErrCommitteeSize       = errors.New("engine: committee size must be ≥ 1")
	ErrSeedRoundUnmappable = errors.New("engine: advance_round cannot map r_seed yet")
	ErrDuplicateJob        = errors.New("engine: job_id already submitted")
	ErrJobNotAssigned      = errors.New("engine: verified result for a job that is not assigned")
	ErrUnknownTx           = errors.New("engine: unknown transaction type")
)

// Store errors.
var (
	// ErrJobRecord: a stored job record does not decode.
	ErrJobRecord = errors.New("engine: malformed job record")
	// ErrUnknownJob: an update names a job the store does not hold.
	ErrUnknownJob = errors.New("engine: unknown job")
)
