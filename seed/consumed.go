package seed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
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

// CBOR layout constants (§12.6 deterministic profile, DECISIONS D9, D11).
const (
	majorUint  = 0
	majorBytes = 2
	majorArray = 4
	majorMap   = 5
	majorTag   = 6
	majorOther = 7

	entryKeys     = 3  // seed_epoch, seed_view, seed_signature
	minEntryBytes = 55 // a3 00 e 01 v 02 5830 ‖ 48 bytes: the smallest valid entry
)

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
	return c.AppendEncode(make([]byte, 0, 9+len(c)*(1+3+9+9+2+SignatureSize)))
}

// AppendEncode appends the §9.2 / D11 encoding of [ConsumedSeedsV1.Encode] to dst.
func (c ConsumedSeedsV1) AppendEncode(dst []byte) ([]byte, error) {
	if err := c.Check(); err != nil {
		return dst, err
	}
	dst = appendHead(dst, majorArray, uint64(len(c)))
	for i := range c {
		dst = appendHead(dst, majorMap, entryKeys)
		dst = appendHead(appendHead(dst, majorUint, 0), majorUint, c[i].Round.Epoch)
		dst = appendHead(appendHead(dst, majorUint, 1), majorUint, c[i].Round.View)
		dst = appendHead(appendHead(dst, majorUint, 2), majorBytes, SignatureSize)
		dst = append(dst, c[i].Signature[:]...)
	}
	return dst, nil
}

// appendHead appends a CBOR head in shortest form (RFC 8949 §4.2.1).
func appendHead(dst []byte, major byte, v uint64) []byte {
	m := major << 5
	switch {
	case v < 24:
		return append(dst, m|byte(v))
	case v <= 0xff:
		return append(dst, m|24, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, m|25), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, m|26), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, m|27), v)
}

// reader is a strict cursor over deterministic CBOR.
type reader struct {
	b   []byte
	off int
}

// head reads one CBOR head and enforces the profile: definite lengths,
// shortest-form arguments, no tags, no floats or simple values.
func (r *reader) head() (major byte, v uint64, err error) {
	if r.off >= len(r.b) {
		return 0, 0, fmt.Errorf("%w: at byte %d", ErrConsumedSeedsTruncated, r.off)
	}
	ib := r.b[r.off]
	major, ai := ib>>5, ib&0x1f
	switch {
	case major == majorTag:
		return 0, 0, fmt.Errorf("%w: at byte %d", ErrConsumedSeedsTag, r.off)
	case major == majorOther:
		return 0, 0, fmt.Errorf("%w: float or simple value 0x%02x at byte %d", ErrConsumedSeedsUnexpectedType, ib, r.off)
	case ai == 31:
		return 0, 0, fmt.Errorf("%w: at byte %d", ErrConsumedSeedsIndefiniteLength, r.off)
	case ai > 27:
		return 0, 0, fmt.Errorf("%w: reserved additional info 0x%02x at byte %d", ErrConsumedSeedsUnexpectedType, ib, r.off)
	case ai < 24:
		r.off++
		return major, uint64(ai), nil
	}
	n := 1 << (ai - 24)
	if len(r.b)-r.off-1 < n {
		return 0, 0, fmt.Errorf("%w: argument at byte %d", ErrConsumedSeedsTruncated, r.off)
	}
	arg := r.b[r.off+1 : r.off+1+n]
	for _, c := range arg {
		v = v<<8 | uint64(c)
	}
	if lo := [...]uint64{24, 1 << 8, 1 << 16, 1 << 32}[ai-24]; v < lo {
		return 0, 0, fmt.Errorf("%w: at byte %d", ErrConsumedSeedsNonCanonicalInt, r.off)
	}
	r.off += 1 + n
	return major, v, nil
}

// expect reads a head of the given major type.
func (r *reader) expect(major byte, what string) (uint64, error) {
	at := r.off
	m, v, err := r.head()
	if err != nil {
		return 0, err
	}
	if m != major {
		return 0, fmt.Errorf("%w: %s at byte %d has major type %d", ErrConsumedSeedsUnexpectedType, what, at, m)
	}
	return v, nil
}

// entry decodes one {0: seed_epoch, 1: seed_view, 2: seed_signature} map.
func (r *reader) entry() (ConsumedSeed, error) {
	var e ConsumedSeed
	n, err := r.expect(majorMap, "entry")
	if err != nil {
		return e, err
	}
	var seen [entryKeys]bool
	prev := -1
	for i := uint64(0); i < n; i++ {
		at := r.off
		k, err := r.expect(majorUint, "map key")
		if err != nil {
			return e, err
		}
		switch {
		case k >= entryKeys:
			return e, fmt.Errorf("%w: key %d at byte %d", ErrConsumedSeedsUnknownKey, k, at)
		case int(k) <= prev:
			return e, fmt.Errorf("%w: key %d after key %d at byte %d", ErrConsumedSeedsKeyOrder, k, prev, at)
		}
		if err := r.value(&e, k); err != nil {
			return e, err
		}
		seen[k], prev = true, int(k)
	}
	for k, ok := range seen {
		if !ok {
			return e, fmt.Errorf("%w: key %d", ErrConsumedSeedsMissingKey, k)
		}
	}
	return e, nil
}

// value decodes the value of entry key k into e.
func (r *reader) value(e *ConsumedSeed, k uint64) error {
	var err error
	switch k {
	case 0:
		e.Round.Epoch, err = r.expect(majorUint, "seed_epoch")
	case 1:
		e.Round.View, err = r.expect(majorUint, "seed_view")
	default:
		var n uint64
		if n, err = r.expect(majorBytes, "seed_signature"); err != nil {
			return err
		}
		if n != SignatureSize {
			return fmt.Errorf("%w: %d bytes", ErrConsumedSeedsSignatureLength, n)
		}
		if len(r.b)-r.off < SignatureSize {
			return fmt.Errorf("%w: seed_signature", ErrConsumedSeedsTruncated)
		}
		r.off += copy(e.Signature[:], r.b[r.off:])
	}
	return err
}

// DecodeConsumedSeedsV1 strictly decodes a ConsumedSeedsV1 block field
// (§9.2, §12.6, DECISIONS D9, D11). Every malformation has its own sentinel;
// the result re-encodes to exactly b. On error the returned list is nil.
func DecodeConsumedSeedsV1(b []byte) (ConsumedSeedsV1, error) {
	r := reader{b: b}
	n, err := r.expect(majorArray, "ConsumedSeedsV1")
	if err != nil {
		return nil, err
	}
	rest := uint64(len(b) - r.off)
	if n > rest { // every entry takes at least one byte
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrConsumedSeedsTruncated, n, rest)
	}
	out := make(ConsumedSeedsV1, 0, min(n, rest/minEntryBytes))
	for i := uint64(0); i < n; i++ {
		e, err := r.entry()
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		out = append(out, e)
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after the array", ErrConsumedSeedsTrailingBytes, len(b)-r.off)
	}
	if err := out.Check(); err != nil {
		return nil, err
	}
	if enc, _ := out.Encode(); !bytes.Equal(enc, b) {
		return nil, ErrConsumedSeedsNonCanonical // unreachable by construction; kept as the D9 contract
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
// KeyForEpoch returns a shared, immutable [Verifier] (the caller must not
// modify it) or an error wrapping [ErrNoThresholdKey] when the epoch's key
// is unknown.
type ThresholdKeys interface {
	KeyForEpoch(epoch uint64) (*Verifier, error)
}

// MemoryThresholdKeys is the in-memory [ThresholdKeys] (§9.2): epoch → Verifier.
// A nil or missing entry is [ErrNoThresholdKey].
type MemoryThresholdKeys map[uint64]*Verifier

// KeyForEpoch implements [ThresholdKeys] (§9.2).
func (m MemoryThresholdKeys) KeyForEpoch(epoch uint64) (*Verifier, error) {
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
