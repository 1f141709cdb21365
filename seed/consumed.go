package seed

import (
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
)

// ConsumedSeed is one ConsumedSeedsV1 entry (§9.2 "Consumed-seed
// commitment", DECISIONS D11): the seed round (seed_epoch, seed_view) and
// its 48-byte MinSig threshold seed signature.
type ConsumedSeed struct {
	Round     Round
	Signature Signature
}

// CanonicalSeedBytes returns canonical_seed_bytes of the committed seed
// (§9.2): replay derives the selection seed from exactly these bytes.
func (c ConsumedSeed) CanonicalSeedBytes() cip11.Hash {
	return Beacon(c).CanonicalSeedBytes()
}

// ConsumedSeedsV1 is the block field of §9.2: the seeds consumed by the
// pending records processed in a block, one per distinct round, sorted
// strictly ascending by (seed_epoch, seed_view). A block that processes no
// M > 1 record carries the empty list (CBOR 0x80, DECISIONS D11).
type ConsumedSeedsV1 []ConsumedSeed

// consumedEntry is one D11 entry map {0: seed_epoch, 1: seed_view,
// 2: seed_signature} in the §12.6 profile of package internal/dcbor.
type consumedEntry struct {
	Epoch     uint64    `cbor:"0,keyasint"`
	View      uint64    `cbor:"1,keyasint"`
	Signature Signature `cbor:"2,keyasint"` // exactly 48 bytes
}

// BuildConsumedSeeds assembles a block's ConsumedSeedsV1 from the seeds of
// the records it processes (§9.2): it sorts by round and drops repeated
// entries. Two different signatures for one round are rejected with
// [ErrConsumedSeedsConflict]. seeds is not modified.
func BuildConsumedSeeds(seeds []ConsumedSeed) (ConsumedSeedsV1, error) {
	out := slices.Clone(seeds)
	slices.SortFunc(out, func(a, b ConsumedSeed) int { return a.Round.Compare(b.Round) })
	var prev *ConsumedSeed
	w := 0
	for i := range out {
		if prev != nil && prev.Round == out[i].Round {
			if prev.Signature != out[i].Signature {
				return nil, fmt.Errorf("%w: round %v", ErrConsumedSeedsConflict, out[i].Round)
			}
			continue
		}
		out[w] = out[i]
		prev = &out[w]
		w++
	}
	return ConsumedSeedsV1(out[:w]), nil
}

// Check enforces the ordering rule of §9.2: entries strictly ascending by
// (seed_epoch, seed_view), so no round appears twice.
func (c ConsumedSeedsV1) Check() error {
	for i := 1; i < len(c); i++ {
		switch c[i-1].Round.Compare(c[i].Round) {
		case 0:
			return fmt.Errorf("%w: entry %d repeats round %v", ErrConsumedSeedsDuplicateRound, i, c[i].Round)
		case 1:
			return fmt.Errorf("%w: entry %d round %v follows %v", ErrConsumedSeedsUnsorted, i, c[i].Round, c[i-1].Round)
		}
	}
	return nil
}

// Encode returns the deterministic CBOR encoding (§9.2, §12.6, D11): an
// array of maps {0: seed_epoch, 1: seed_view, 2: seed_signature}. It fails
// if the entries are not strictly ascending by round.
func (c ConsumedSeedsV1) Encode() ([]byte, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	entries := make([]consumedEntry, len(c))
	for i, e := range c {
		entries[i] = consumedEntry{e.Round.Epoch, e.Round.View, e.Signature}
	}
	return dcbor.New().Marshal(entries)
}

// AppendEncode appends the §9.2 / D11 encoding of [ConsumedSeedsV1.Encode] to dst.
func (c ConsumedSeedsV1) AppendEncode(dst []byte) ([]byte, error) {
	b, err := c.Encode()
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// DecodeConsumedSeedsV1 strictly decodes a ConsumedSeedsV1 block field
// (§9.2, §12.6, DECISIONS D9, D11). A profile defect wraps its
// internal/dcbor sentinel (a seed_signature of other than 48 bytes is
// dcbor's ErrByteLength); entries out of order wrap
// [ErrConsumedSeedsUnsorted] or [ErrConsumedSeedsDuplicateRound]. The
// result re-encodes to exactly b. On error the returned list is nil.
func DecodeConsumedSeedsV1(b []byte) (ConsumedSeedsV1, error) {
	var entries []consumedEntry
	if err := dcbor.New().Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("seed: ConsumedSeedsV1: %w", err)
	}
	out := make(ConsumedSeedsV1, len(entries))
	for i, e := range entries {
		out[i] = ConsumedSeed{Round{e.Epoch, e.View}, e.Signature}
	}
	if err := out.Check(); err != nil {
		return nil, err
	}
	return out, nil
}

// SeedFor returns the committed signature for round r (§9.2: replay derives
// selection seeds from exactly the committed bytes). c must be sorted, as
// decoded or built.
func (c ConsumedSeedsV1) SeedFor(r Round) (Signature, bool) {
	i, ok := slices.BinarySearchFunc(c, r, func(e ConsumedSeed, t Round) int { return e.Round.Compare(t) })
	if !ok {
		return Signature{}, false
	}
	return c[i].Signature, true
}

// CanonicalSeedBytesFor returns canonical_seed_bytes of the committed seed
// for round r (§9.2), or [ErrConsumedSeedMissing].
func (c ConsumedSeedsV1) CanonicalSeedBytesFor(r Round) (cip11.Hash, error) {
	sig, ok := c.SeedFor(r)
	if !ok {
		return cip11.Hash{}, fmt.Errorf("%w: round %v", ErrConsumedSeedMissing, r)
	}
	return Beacon{Round: r, Signature: sig}.CanonicalSeedBytes(), nil
}

// ThresholdKeys resolves the consensus threshold public key of an epoch
// (§9.2: "under the threshold public key of the epoch named by seed_epoch").
// KeyForEpoch returns the epoch's [SeedVerifier] (a shared, immutable
// [*Verifier] in the in-memory store) or an error wrapping
// [ErrNoThresholdKey] when the epoch's key is unknown.
type ThresholdKeys interface {
	KeyForEpoch(epoch uint64) (SeedVerifier, error)
}

// SeedVerifier checks a threshold seed signature of one round under one
// epoch's key (§9.2). [*Verifier] is the implementation; a node may wrap it
// (for example to reuse verifications done ahead of execution), but the
// answer must be exactly Verifier.Verify's.
type SeedVerifier interface {
	Verify(r Round, sig []byte) error
}

// MemoryThresholdKeys is the in-memory [ThresholdKeys] (§9.2): epoch → Verifier.
// A nil or missing entry is [ErrNoThresholdKey].
type MemoryThresholdKeys map[uint64]*Verifier

// KeyForEpoch implements [ThresholdKeys] (§9.2).
func (m MemoryThresholdKeys) KeyForEpoch(epoch uint64) (SeedVerifier, error) {
	if v := m[epoch]; v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("%w: epoch %d", ErrNoThresholdKey, epoch)
}

// ValidateConsumedSeeds applies the three §9.2 block-validity rules to a
// block's decoded ConsumedSeedsV1 c, given the seed rounds of the pending
// records the block processes (in any order, repeats allowed):
//
//  1. every processed round has exactly one entry ([ErrConsumedSeedMissing]);
//  2. no entry is consumed by nothing ([ErrConsumedSeedUnused]);
//  3. every entry verifies as the threshold seed of its round under the key
//     of epoch seed_epoch ([ErrConsumedSeedUnverified], also wrapping the
//     key-lookup or signature sentinel).
//
// Structural rules (sorted, no duplicate round) are checked first and the
// pairing checks last, so cheap faults are found before expensive ones.
func ValidateConsumedSeeds(c ConsumedSeedsV1, processed []Round, keys ThresholdKeys) error {
	if err := c.Check(); err != nil {
		return err
	}
	rounds := slices.Clone(processed)
	slices.SortFunc(rounds, Round.Compare)
	rounds = slices.Compact(rounds)
	i := 0
	for _, r := range rounds {
		if i < len(c) && c[i].Round.Less(r) {
			return fmt.Errorf("%w: round %v", ErrConsumedSeedUnused, c[i].Round)
		}
		if i == len(c) || c[i].Round != r {
			return fmt.Errorf("%w: round %v", ErrConsumedSeedMissing, r)
		}
		i++
	}
	if i < len(c) {
		return fmt.Errorf("%w: round %v", ErrConsumedSeedUnused, c[i].Round)
	}
	for _, e := range c {
		if err := verifyEntry(e, keys); err != nil {
			return err
		}
	}
	return nil
}

func verifyEntry(e ConsumedSeed, keys ThresholdKeys) error {
	v, err := keys.KeyForEpoch(e.Round.Epoch)
	switch {
	case err != nil:
	case v == nil:
		err = fmt.Errorf("%w: epoch %d", ErrNoThresholdKey, e.Round.Epoch)
	default:
		err = v.Verify(e.Round, e.Signature[:])
	}
	if err != nil {
		return fmt.Errorf("%w: round %v: %w", ErrConsumedSeedUnverified, e.Round, err)
	}
	return nil
}
