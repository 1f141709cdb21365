package engine

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
)

// PendingSelectionV1 is the §9.2 record written in block S for an M > 1 job
// and consumed (deleted) by the pending-selection pass. It is encoded with
// the §12.6 deterministic CBOR profile (package internal/dcbor) as a map
// with integer keys 0–10 in declaration order (DECISIONS D11).
type PendingSelectionV1 struct {
	Version                uint8      `cbor:"0,keyasint"`  // = 1
	JobID                  [32]byte   `cbor:"1,keyasint"`  // job_id
	SubmittedAt            uint64     `cbor:"2,keyasint"`  // S
	SelectionStateHeight   uint64     `cbor:"3,keyasint"`  // T = S
	CommitteeSize          uint32     `cbor:"4,keyasint"`  // M
	SubmissionEpoch        uint64     `cbor:"5,keyasint"`  // r_submit.epoch
	SubmissionView         uint64     `cbor:"6,keyasint"`  // r_submit.view
	SeedEpoch              uint64     `cbor:"7,keyasint"`  // r_seed.epoch
	SeedView               uint64     `cbor:"8,keyasint"`  // r_seed.view
	SeedDelayViews         uint64     `cbor:"9,keyasint"`  // K, a view count
	CandidatesSnapshotRoot cip11.Hash `cbor:"10,keyasint"` // block-S candidates_snapshot_root
}

// PendingSelectionV1 field-rule errors (§9.2, DECISIONS D11). A record that
// is not in the §12.6 deterministic-CBOR profile (D9) wraps the sentinel of
// its defect from package internal/dcbor instead (ErrTruncated,
// ErrNonShortestInt, ErrUnknownKey, ErrByteLength, …).
var (
	ErrPendingVersion       = errors.New("engine: PendingSelectionV1 version is not 1")
	ErrPendingStateHeight   = errors.New("engine: PendingSelectionV1 selection_state_height differs from submitted_at")
	ErrPendingCommitteeSize = errors.New("engine: PendingSelectionV1 committee_size below 2")
)

// PendingVersion is the only PendingSelectionV1.version.
const PendingVersion = 1

// Storage key domains of §9.2.
const (
	pendingByJobDomain = "cip11:pending-selection:v1:job"
	pendingDueDomain   = "cip11:pending-selection:v1:due-round"
)

// Encode returns the deterministic CBOR of r (§12.6 profile, D11).
func (r PendingSelectionV1) Encode() []byte {
	b, err := dcbor.New().Marshal(&r)
	if err != nil { // a fixed struct of integers and byte arrays always encodes
		return nil
	}
	return b
}

// DecodePending strictly decodes a PendingSelectionV1: anything whose
// re-encoding is not byte-identical (DECISIONS D9) wraps the dcbor sentinel
// of its defect; a canonical record that breaks a §9.2 field rule wraps its
// own sentinel ([PendingSelectionV1.Validate]).
func DecodePending(b []byte) (PendingSelectionV1, error) {
	var r PendingSelectionV1
	if err := dcbor.New().Unmarshal(b, &r); err != nil {
		return PendingSelectionV1{}, fmt.Errorf("engine: PendingSelectionV1: %w", err)
	}
	if err := r.Validate(); err != nil {
		return PendingSelectionV1{}, err
	}
	return r, nil
}

// Validate checks the §9.2 field rules a record must satisfy on its own:
// version 1, T = S, and M > 1 (M == 1 never pends).
func (r PendingSelectionV1) Validate() error {
	switch {
	case r.Version != PendingVersion:
		return fmt.Errorf("%w: %d", ErrPendingVersion, r.Version)
	case r.SelectionStateHeight != r.SubmittedAt:
		return fmt.Errorf("%w: T=%d S=%d", ErrPendingStateHeight, r.SelectionStateHeight, r.SubmittedAt)
	case r.CommitteeSize < 2:
		return fmt.Errorf("%w: M=%d", ErrPendingCommitteeSize, r.CommitteeSize)
	}
	return nil
}

// PendingByJobKey is keccak256("cip11:pending-selection:v1:job" ‖ job_id) (§9.2).
func PendingByJobKey(jobID [32]byte) cip11.Hash {
	return cip11.Keccak256([]byte(pendingByJobDomain), jobID[:])
}

// PendingDueRoundKey is the iterable lexicographic index key (§9.2):
// "cip11:pending-selection:v1:due-round" ‖ seed_epoch_be8 ‖ seed_view_be8 ‖
// submitted_at_be8 ‖ job_id.
func PendingDueRoundKey(r PendingSelectionV1) []byte {
	k := DueRoundPrefix(r.SeedEpoch, r.SeedView)
	k = binary.BigEndian.AppendUint64(k, r.SubmittedAt)
	return append(k, r.JobID[:]...)
}

// DueRoundPrefix is the due-round index prefix of every record whose seed
// round is Round(epoch, view).
func DueRoundPrefix(epoch, view uint64) []byte {
	k := make([]byte, 0, len(pendingDueDomain)+8+8+8+32)
	k = append(k, pendingDueDomain...)
	k = binary.BigEndian.AppendUint64(k, epoch)
	return binary.BigEndian.AppendUint64(k, view)
}
