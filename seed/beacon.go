package seed

import (
	"encoding/binary"
	"fmt"
	"hash"

	"golang.org/x/crypto/sha3"

	"github.com/cip11/cip11"
)

// SchemeID is beacon_hash_v1's scheme_id_u8 (§9.2 "canonical_seed_bytes").
type SchemeID uint8

// Seed schemes (§9.2).
const (
	// SchemeMinSig is commonware BLS12-381 threshold VRF MinSig, the active
	// scheme: 48-byte compressed G1 signatures.
	SchemeMinSig SchemeID = 0x01
	// SchemeMinPk is reserved for MinPk: 96-byte compressed G2 signatures.
	SchemeMinPk SchemeID = 0x02
)

// Signature and key sizes (§9.2, DECISIONS D12).
const (
	SignatureSize     = 48 // MinSig seed signature: compressed G1
	MinPkSignatureLen = 96 // reserved MinPk seed signature: compressed G2
	PublicKeySize     = 96 // MinSig threshold public key: compressed G2
	SecretKeySize     = 32 // big-endian scalar below the group order
)

// SignatureLen returns the exact signature length scheme s requires (§9.2:
// signature_len_be2 is 0x0030 for MinSig and 0x0060 for MinPk).
func (s SchemeID) SignatureLen() (int, error) {
	switch s {
	case SchemeMinSig:
		return SignatureSize, nil
	case SchemeMinPk:
		return MinPkSignatureLen, nil
	}
	return 0, fmt.Errorf("%w: 0x%02x", ErrUnknownSeedScheme, uint8(s))
}

// Signature is a MinSig seed signature: 48 compressed G1 bytes as emitted by
// commonware's G1::write (§9.2).
type Signature [SignatureSize]byte

// SignatureFromBytes copies a MinSig seed signature, requiring exactly 48
// bytes (§9.2). It does not check that the bytes are a valid point.
func SignatureFromBytes(b []byte) (Signature, error) {
	var s Signature
	if len(b) != SignatureSize {
		return s, fmt.Errorf("%w: MinSig needs %d bytes, got %d", ErrSeedSignatureLength, SignatureSize, len(b))
	}
	copy(s[:], b)
	return s, nil
}

// Beacon is an execution-readable consensus seed R: commonware's
// Seed { round, signature } under the active MinSig scheme (§9.2).
type Beacon struct {
	Round     Round
	Signature Signature
}

// CanonicalSeedBytes returns canonical_seed_bytes(b) = beacon_hash_v1(b)
// with scheme 0x01 (§9.2). Verify the seed before using it for selection.
func (b Beacon) CanonicalSeedBytes() cip11.Hash {
	var h Hasher
	return h.BeaconHash(b.Round, &b.Signature)
}

// Domain strings of §9.2, raw ASCII without a length prefix (DECISIONS D2).
const (
	beaconDomain    = "cowboy-beacon-v1"
	selectionDomain = "cowboy-runner-select-v3:"
)

// BeaconHashV1 computes canonical_seed_bytes(R) = beacon_hash_v1(R) (§9.2):
//
//	keccak256("cowboy-beacon-v1" ‖ epoch_be8 ‖ view_be8 ‖ scheme_id_u8 ‖ signature_len_be2 ‖ signature_bytes)
//
// sig must have exactly the length scheme requires. BeaconHashV1 hashes
// bytes; it does not verify the signature (see [Verifier]).
func BeaconHashV1(r Round, scheme SchemeID, sig []byte) (cip11.Hash, error) {
	n, err := scheme.SignatureLen()
	if err != nil {
		return cip11.Hash{}, err
	}
	if len(sig) != n {
		return cip11.Hash{}, fmt.Errorf("%w: scheme 0x%02x needs %d bytes, got %d", ErrSeedSignatureLength, uint8(scheme), n, len(sig))
	}
	var hdr [16 + 8 + 8 + 1 + 2]byte
	copy(hdr[:], beaconDomain)
	binary.BigEndian.PutUint64(hdr[16:], r.Epoch)
	binary.BigEndian.PutUint64(hdr[24:], r.View)
	hdr[32] = byte(scheme)
	binary.BigEndian.PutUint16(hdr[33:], uint16(n))
	return cip11.Keccak256(hdr[:], sig), nil
}

// Mode is the v3 selection preimage's mode_u8 (§9.2 "The mode byte").
type Mode uint8

// Selection modes (§9.2).
const (
	// ModeImmediate (0x00): M == 1, selected in block S from the parent beacon R_{S-1}.
	ModeImmediate Mode = 0x00
	// ModeDelayed (0x01): M > 1, selected once the seed for r_seed is committed.
	ModeDelayed Mode = 0x01
)

// Valid reports whether m is one of the two §9.2 mode bytes.
func (m Mode) Valid() bool { return m == ModeImmediate || m == ModeDelayed }

// ModeFor returns the §9.2 mode for committee size M: 0x00 for M == 1,
// 0x01 for M > 1.
func ModeFor(m uint32) (Mode, error) {
	switch {
	case m == 1:
		return ModeImmediate, nil
	case m > 1:
		return ModeDelayed, nil
	}
	return 0, fmt.Errorf("%w: M = 0", ErrCommitteeSize)
}

// SelectionSeedV3 computes the v3 selection seed (§9.2):
//
//	keccak256("cowboy-runner-select-v3:" ‖ mode_u8 ‖ canonical_seed_bytes(R) ‖ job_id ‖ submitted_at_le8)
//
// It allocates a hash state; per-job hot paths use [Hasher.SelectionSeed].
func SelectionSeedV3(mode Mode, canonicalSeed, jobID cip11.Hash, submittedAt uint64) (cip11.Hash, error) {
	var h Hasher
	return h.SelectionSeed(mode, &canonicalSeed, &jobID, submittedAt)
}

// Preimage lengths (§9.2), both below one Keccak-256 block (136 bytes).
const (
	beaconPreimageLen    = len(beaconDomain) + 8 + 8 + 1 + 2 + SignatureSize
	selectionPreimageLen = len(selectionDomain) + 1 + 32 + 32 + 8
)

// Hasher computes the §9.2 beacon and selection hashes without allocating
// once its Keccak state exists: a caller-owned scratch state, reused across
// calls. The zero value is ready to use. A Hasher is not safe for concurrent
// use; give each goroutine its own.
type Hasher struct {
	d   hash.Hash
	buf [selectionPreimageLen]byte
	out [32]byte
}

// sum hashes h.buf[:n] with the reused Keccak-256 state (DECISIONS D1).
func (h *Hasher) sum(n int) cip11.Hash {
	if h.d == nil {
		h.d = sha3.NewLegacyKeccak256()
	}
	h.d.Reset()
	h.d.Write(h.buf[:n])
	h.d.Sum(h.out[:0])
	return h.out
}

// BeaconHash computes beacon_hash_v1 for a MinSig seed (§9.2, scheme 0x01,
// signature_len_be2 = 0x0030). The signature is taken by pointer only to
// avoid a copy; it is not retained.
func (h *Hasher) BeaconHash(r Round, sig *Signature) cip11.Hash {
	b := h.buf[:beaconPreimageLen]
	copy(b, beaconDomain)
	binary.BigEndian.PutUint64(b[16:], r.Epoch)
	binary.BigEndian.PutUint64(b[24:], r.View)
	b[32] = byte(SchemeMinSig)
	binary.BigEndian.PutUint16(b[33:], SignatureSize)
	copy(b[35:], sig[:])
	return h.sum(beaconPreimageLen)
}

// SelectionSeed computes the v3 selection seed (§9.2) for the job
// (jobID, submittedAt) from canonical_seed_bytes(R), where R is R_{S-1} for
// mode 0x00 and the seed of r_seed for mode 0x01. Any other mode is
// rejected with [ErrUnknownSelectionMode]. Arguments are not retained.
func (h *Hasher) SelectionSeed(mode Mode, canonicalSeed, jobID *cip11.Hash, submittedAt uint64) (cip11.Hash, error) {
	if !mode.Valid() {
		return cip11.Hash{}, fmt.Errorf("%w: 0x%02x", ErrUnknownSelectionMode, uint8(mode))
	}
	b := h.buf[:]
	n := copy(b, selectionDomain)
	b[n] = byte(mode)
	copy(b[n+1:], canonicalSeed[:])
	copy(b[n+33:], jobID[:])
	binary.LittleEndian.PutUint64(b[n+65:], submittedAt)
	return h.sum(selectionPreimageLen), nil
}

// CheckGenesisBeacon enforces §9.2 "For M == 1 genesis bootstrapping":
// activating CIP-11 selection (CIP11_PRESENT_FIRST_ENABLED, §13) on a chain
// whose configuration lacks a genesis beacon is invalid.
func CheckGenesisBeacon(selectionActive bool, genesis *Beacon) error {
	if selectionActive && genesis == nil {
		return fmt.Errorf("%w: CIP11_PRESENT_FIRST_ENABLED requires one", ErrNoGenesisBeacon)
	}
	return nil
}

// ParentBeacon returns the beacon R for an M == 1 selection in block S
// (§9.2): the parent's execution-readable beacon R_{S-1}, or, when parent is
// nil because the parent predates the first certified round, the configured
// genesis beacon. The M == 1 path is total: with a genesis beacon configured
// it never fails.
func ParentBeacon(parent, genesis *Beacon) (Beacon, error) {
	switch {
	case parent != nil:
		return *parent, nil
	case genesis != nil:
		return *genesis, nil
	}
	return Beacon{}, fmt.Errorf("%w: parent beacon unavailable", ErrNoGenesisBeacon)
}
