package blockheader

import (
	"bytes"
	"fmt"

	"github.com/cip11/cip11/internal/dcbor"
	"github.com/cip11/cip11/seed"
)

// Format constants (SPEC-NOTES H1–H3).
const (
	// Magic opens every header; a devnet transaction opens with "C11T".
	Magic = "C11H"
	// Version is the only header version.
	Version uint8 = 1
	// MaxHeaderBytes bounds a whole header, magic included: 1 MiB, the
	// CometBFT default mempool max_tx_bytes.
	MaxHeaderBytes = 1 << 20
	// MaxPresenceBytes bounds the PresenceInputV1 field: 256 KiB, a bitmap
	// over more than two million runners (§6.6 plans for about 5,000).
	MaxPresenceBytes = 1 << 18
)

// Header is the CIP-11 execution context of one block on CometBFT
// (DECISIONS D22, D32; §17).
type Header struct {
	// Version is [Version].
	Version uint8
	// Round is the block's proposal round Round(epoch, view); on CometBFT
	// view is the height (D30).
	Round seed.Round
	// ParentBeacon is R_{H−1}, the threshold seed of the parent's round
	// recovered from the parent's vote extensions (D31); nil only at
	// height 1.
	ParentBeacon *seed.Beacon
	// Finalized is the greatest height finalized and applied when the block
	// executes (§9.2 condition 1, D22): h−1 on CometBFT, so 0 — none — at
	// height 1. [Header.FinalizedHeight] gives the engine's form.
	Finalized uint64
	// Presence is the block's PresenceInputV1 bytes (§7.2), carried
	// verbatim and not decoded here: under §7.2 rule 1 a malformed field is
	// legal. nil means the block has no field (CBOR null); a non-nil empty
	// slice is an empty byte string.
	Presence []byte
	// ConsumedSeeds is the block's ConsumedSeedsV1 (§9.2, D11), strictly
	// ascending by round; empty when the block processes no M > 1 record.
	ConsumedSeeds seed.ConsumedSeedsV1
}

// FinalizedHeight returns Finalized in the engine's form (D22): nil when no
// height is finalized (Finalized == 0), else a pointer to a copy.
func (h *Header) FinalizedHeight() *uint64 {
	if h == nil || h.Finalized == 0 {
		return nil
	}
	f := h.Finalized
	return &f
}

// roundCBOR is Round(epoch, view) as the map {0: epoch, 1: view}.
type roundCBOR struct {
	Epoch uint64 `cbor:"0,keyasint"`
	View  uint64 `cbor:"1,keyasint"`
}

// beaconCBOR is a beacon as the D11 entry map {0: epoch, 1: view,
// 2: signature}, the shape of a ConsumedSeedsV1 entry.
type beaconCBOR struct {
	Epoch     uint64         `cbor:"0,keyasint"`
	View      uint64         `cbor:"1,keyasint"`
	Signature seed.Signature `cbor:"2,keyasint"` // exactly 48 bytes
}

// headerCBOR is the D7 map: keys are declaration positions, every key
// present, absent options null.
type headerCBOR struct {
	Version       uint8       `cbor:"0,keyasint"`
	Round         roundCBOR   `cbor:"1,keyasint"`
	ParentBeacon  *beaconCBOR `cbor:"2,keyasint"`
	Finalized     uint64      `cbor:"3,keyasint"`
	Presence      *[]byte     `cbor:"4,keyasint"`
	ConsumedSeeds dcbor.Raw   `cbor:"5,keyasint"` // the ConsumedSeedsV1 item, decoded by package seed
}

// checkFields applies the bounds every header meets whatever its height.
func checkFields(version uint8, presence []byte) error {
	if version != Version {
		return fmt.Errorf("%w: %d", ErrHeaderVersion, version)
	}
	if len(presence) > MaxPresenceBytes {
		return fmt.Errorf("%w: presence of %d bytes, at most %d", ErrPresenceTooLong, len(presence), MaxPresenceBytes)
	}
	return nil
}

// Encode returns the header's bytes: [Magic] ‖ the §12.6 CBOR map (DECISIONS
// D7–D9, D32). It refuses what [Decode] would refuse (a version other than
// [Version], an over-long presence field, ConsumedSeedsV1 out of order, a
// header over [MaxHeaderBytes]); it does not apply [Check].
func Encode(h *Header) ([]byte, error) {
	if h == nil {
		return nil, ErrNilHeader
	}
	if err := checkFields(h.Version, h.Presence); err != nil {
		return nil, err
	}
	c := dcbor.New()
	seeds, err := h.ConsumedSeeds.Encode()
	if err != nil {
		return nil, fmt.Errorf("blockheader: consumed_seeds: %w", err)
	}
	v := headerCBOR{
		Version:       h.Version,
		Round:         roundCBOR{h.Round.Epoch, h.Round.View},
		Finalized:     h.Finalized,
		ConsumedSeeds: seeds,
	}
	if b := h.ParentBeacon; b != nil {
		v.ParentBeacon = &beaconCBOR{b.Round.Epoch, b.Round.View, b.Signature}
	}
	if h.Presence != nil {
		p := h.Presence
		v.Presence = &p
	}
	out, err := c.Append([]byte(Magic), &v)
	if err != nil {
		return nil, fmt.Errorf("blockheader: %w", err)
	}
	if len(out) > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrHeaderTooLarge, len(out), MaxHeaderBytes)
	}
	return out, nil
}

// IsHeader reports whether b starts with [Magic]: whether a block's
// transaction claims to be a header (D32: only the first may).
func IsHeader(b []byte) bool { return bytes.HasPrefix(b, []byte(Magic)) }

// Decode strictly decodes a header (DECISIONS D9, D32): b is [Magic] and
// one §12.6 CBOR item that [Encode] of the result reproduces byte for byte.
// Checks run in this order: magic ([ErrNotHeader]), size ([ErrHeaderTooLarge]),
// the profile (internal/dcbor sentinels), the version ([ErrHeaderVersion]), the
// presence bound ([ErrPresenceTooLong]), then ConsumedSeedsV1 (dcbor or seed
// sentinels). It does not apply [Check]. On error the result is nil.
func Decode(b []byte) (*Header, error) {
	if !IsHeader(b) {
		return nil, ErrNotHeader
	}
	if len(b) > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrHeaderTooLarge, len(b), MaxHeaderBytes)
	}
	var v headerCBOR
	if err := dcbor.New().Unmarshal(b[len(Magic):], &v); err != nil {
		return nil, fmt.Errorf("blockheader: %w", err)
	}
	var presence []byte
	if v.Presence != nil {
		presence = *v.Presence
		if presence == nil {
			presence = []byte{}
		}
	}
	if err := checkFields(v.Version, presence); err != nil {
		return nil, err
	}
	seeds, err := seed.DecodeConsumedSeedsV1(v.ConsumedSeeds)
	if err != nil {
		return nil, fmt.Errorf("blockheader: consumed_seeds: %w", err)
	}
	h := &Header{
		Version:       v.Version,
		Round:         seed.Round{Epoch: v.Round.Epoch, View: v.Round.View},
		Finalized:     v.Finalized,
		Presence:      presence,
		ConsumedSeeds: seeds,
	}
	if pb := v.ParentBeacon; pb != nil {
		h.ParentBeacon = &seed.Beacon{Round: seed.Round{Epoch: pb.Epoch, View: pb.View}, Signature: pb.Signature}
	}
	return h, nil
}
