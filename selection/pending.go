package selection

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/fxamacker/cbor/v2"
)

// PendingSelectionV1 is the §9.2 record written in block S for an M > 1 job
// and consumed (deleted) by the pending-selection pass. It is encoded with
// the §12.6 deterministic CBOR profile as a map with integer keys 0–10 in
// declaration order (DECISIONS D11).
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

// PendingVersion is the only PendingSelectionV1.version.
const PendingVersion = 1

// Storage key domains of §9.2.
const (
	pendingByJobDomain = "cip11:pending-selection:v1:job"
	pendingDueDomain   = "cip11:pending-selection:v1:due-round"
)

func pendingCBOR() (cbor.EncMode, cbor.DecMode, error) {
	enc, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		return nil, nil, err
	}
	dec, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		MaxMapPairs:       16,
		MaxNestedLevels:   4,
	}.DecMode()
	return enc, dec, err
}

// Encode returns the deterministic CBOR of r (§12.6 profile, D11).
func (r PendingSelectionV1) Encode() []byte {
	enc, _, err := pendingCBOR()
	if err != nil {
		return nil
	}
	b, err := enc.Marshal(r)
	if err != nil { // a fixed struct of integers and byte arrays cannot fail
		return nil
	}
	return b
}

// DecodePending strictly decodes a PendingSelectionV1: anything whose
// re-encoding is not byte-identical (non-shortest ints, unsorted, duplicate,
// missing or extra keys, wrong byte-string lengths, tags, indefinite
// lengths, trailing bytes — DECISIONS D9) wraps ErrPendingNotCanonical; a
// canonical record that breaks a §9.2 field rule wraps its own sentinel.
func DecodePending(b []byte) (PendingSelectionV1, error) {
	var r PendingSelectionV1
	_, dec, err := pendingCBOR()
	if err != nil {
		return PendingSelectionV1{}, fmt.Errorf("%w: %v", ErrPendingNotCanonical, err)
	}
	if err := dec.Unmarshal(b, &r); err != nil {
		return PendingSelectionV1{}, fmt.Errorf("%w: %v", ErrPendingNotCanonical, err)
	}
	if !bytes.Equal(r.Encode(), b) {
		return PendingSelectionV1{}, fmt.Errorf("%w: re-encoding differs", ErrPendingNotCanonical)
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
