package presence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/cip11/cip11"
)

// Version is the only PresenceInputV1 version byte (§7.2 "Encoding").
const Version byte = 0x01

// Kind is the PresenceInputV1 kind byte (§7.2): two encodings of the same
// abstract present set.
type Kind byte

// The two §7.2 kinds.
const (
	KindBitmap Kind = 0x00 // ⌈n/8⌉ bytes, bit j of byte b (LSB-first) is index 8b+j
	KindSparse Kind = 0x01 // u32 BE count ‖ count strictly ascending u32 BE indices
)

// MaxRegistrySize bounds the §7.2 index domain: sparse counts and indices are
// u32, so a registry of more than 2^32−1 runners cannot be encoded.
const MaxRegistrySize = math.MaxUint32

// Malformation sentinels (§7.2 "Malformed means any of"). Each §7.2 defect
// has its own sentinel; [Decode] wraps exactly one of them with %w and adds
// the offending values. When an input has several defects, the first one met
// reading the bytes in order is reported (within one sparse index, order
// before range).
var (
	// ErrTruncatedHeader: fewer than the two header bytes (version ‖ kind).
	// Not one of the seven §7.2 defects by name; an empty input is reported
	// here rather than as a wrong version (a one-byte input whose byte is not
	// 0x01 is ErrUnknownVersion).
	ErrTruncatedHeader = errors.New("presence: PresenceInputV1 shorter than its 2-byte header")
	// ErrUnknownVersion: version byte is not 0x01 (§7.2 "wrong version").
	ErrUnknownVersion = errors.New("presence: wrong PresenceInputV1 version")
	// ErrUnknownKind: kind byte is neither 0x00 nor 0x01 (§7.2 "unknown kind").
	ErrUnknownKind = errors.New("presence: unknown PresenceInputV1 kind")
	// ErrBitmapLength: bitmap body is not exactly ⌈|registry|/8⌉ bytes
	// (§7.2 "wrong bitmap length").
	ErrBitmapLength = errors.New("presence: wrong bitmap length")
	// ErrSparseLength: sparse body length ≠ 4 + 4·count, including a body too
	// short to hold the count (§7.2 "sparse body length not equal to 4 + 4·sparse_count").
	ErrSparseLength = errors.New("presence: sparse body length is not 4 + 4·count")
	// ErrBitBeyondRegistry: a bitmap bit at position ≥ |registry| is set
	// (§7.2 "a set bit beyond |registry|").
	ErrBitBeyondRegistry = errors.New("presence: bitmap bit set beyond the registry")
	// ErrSparseNotAscending: a sparse index is ≤ its predecessor
	// (§7.2 "a non-ascending/duplicate sparse index").
	ErrSparseNotAscending = errors.New("presence: sparse index not strictly ascending")
	// ErrIndexBeyondRegistry: a sparse index is ≥ |registry(H−1)|
	// (§7.2 "any index ≥ |registry(H−1)|"); also returned by [NewSet].
	ErrIndexBeyondRegistry = errors.New("presence: index beyond the registry")
	// ErrRegistrySize: the caller's registry size is negative or above
	// [MaxRegistrySize]. A caller error, never a property of the block.
	ErrRegistrySize = errors.New("presence: registry size out of range")
)

// Set is a present set over the registry index domain [0, RegistrySize())
// (§7.2): a compact bitset, one bit per registry index. The zero Set is the
// empty set over an empty registry. A Set is immutable once built.
type Set struct {
	words []uint64 // bit i%64 of words[i/64] is index i; no bit ≥ n is set
	n     int      // |registry(H−1)|
	count int
}

// NewSet returns the set of the given registry indices over a registry of
// registrySize runners (§7.2 index domain). Order and repetition in indices
// do not matter; an index outside [0, registrySize) is an error wrapping
// [ErrIndexBeyondRegistry].
func NewSet(registrySize int, indices []int) (Set, error) {
	s, err := emptySet(registrySize)
	if err != nil {
		return Set{}, err
	}
	for _, i := range indices {
		if i < 0 || i >= registrySize {
			return Set{}, fmt.Errorf("%w: index %d, registry size %d", ErrIndexBeyondRegistry, i, registrySize)
		}
		s.words[i/64] |= 1 << (i % 64)
	}
	s.count = popcount(s.words)
	return s, nil
}

func emptySet(n int) (Set, error) {
	if n < 0 || uint64(n) > MaxRegistrySize {
		return Set{}, fmt.Errorf("%w: %d", ErrRegistrySize, n)
	}
	return Set{words: make([]uint64, (n+63)/64), n: n}, nil
}

// Has reports whether registry index i is present (§7.2: element i ↔
// registry index i). Indices outside the domain are not present.
func (s Set) Has(i int) bool {
	return i >= 0 && i < s.n && s.words[i/64]&(1<<(i%64)) != 0
}

// Len returns the number of present indices, |PresenceInput(H)| (§7.2).
func (s Set) Len() int { return s.count }

// RegistrySize returns |registry(H−1)|, the size of the §7.2 index domain.
func (s Set) RegistrySize() int { return s.n }

// Indices returns the present registry indices (§7.2) in ascending order.
func (s Set) Indices() []int {
	out := make([]int, 0, s.count)
	for w, word := range s.words {
		for word != 0 {
			out = append(out, w*64+bits.TrailingZeros64(word))
			word &= word - 1
		}
	}
	return out
}

// Equal reports whether s and t have the same domain and the same members —
// the §7.2 sense in which a bitmap and a sparse input encode the same set.
func (s Set) Equal(t Set) bool {
	if s.n != t.n || s.count != t.count {
		return false
	}
	for i := range s.words {
		if s.words[i] != t.words[i] {
			return false
		}
	}
	return true
}

func popcount(words []uint64) int {
	c := 0
	for _, w := range words {
		c += bits.OnesCount64(w)
	}
	return c
}

// Decode decodes PresenceInputV1 bytes against a registry of registrySize
// runners — |registry(H−1)|, the parent-block index basis (§7.2, §8.5) — and
// returns the present set. Either valid kind is accepted (§7.2: nodes decode,
// never re-canonicalize). Any §7.2 malformation returns an error wrapping its
// own sentinel. Decode never modifies b and never retains it.
func Decode(b []byte, registrySize int) (Set, error) {
	if registrySize < 0 || uint64(registrySize) > MaxRegistrySize {
		return Set{}, fmt.Errorf("%w: %d", ErrRegistrySize, registrySize)
	}
	switch {
	case len(b) == 0:
		return Set{}, fmt.Errorf("%w: empty input", ErrTruncatedHeader)
	case b[0] != Version:
		return Set{}, fmt.Errorf("%w: 0x%02x", ErrUnknownVersion, b[0])
	case len(b) == 1:
		return Set{}, fmt.Errorf("%w: no kind byte", ErrTruncatedHeader)
	}
	switch Kind(b[1]) {
	case KindBitmap:
		return decodeBitmap(b[2:], registrySize)
	case KindSparse:
		return decodeSparse(b[2:], registrySize)
	}
	return Set{}, fmt.Errorf("%w: 0x%02x", ErrUnknownKind, b[1])
}

// decodeBitmap reads the LSB-first bitmap as little-endian 64-bit words:
// byte k holds indices 8k…8k+7, so bytes 8w…8w+7 are exactly word w.
func decodeBitmap(body []byte, n int) (Set, error) {
	if want := (n + 7) / 8; len(body) != want {
		return Set{}, fmt.Errorf("%w: %d bytes, want %d for registry size %d", ErrBitmapLength, len(body), want, n)
	}
	s := Set{words: make([]uint64, (n+63)/64), n: n}
	full := len(body) / 8
	for w := 0; w < full; w++ {
		s.words[w] = binary.LittleEndian.Uint64(body[8*w:])
	}
	for k := 8 * full; k < len(body); k++ {
		s.words[full] |= uint64(body[k]) << (8 * (k - 8*full))
	}
	if r := n % 64; r != 0 && s.words[len(s.words)-1]>>r != 0 {
		bit := (len(s.words)-1)*64 + r + bits.TrailingZeros64(s.words[len(s.words)-1]>>r)
		return Set{}, fmt.Errorf("%w: bit %d, registry size %d", ErrBitBeyondRegistry, bit, n)
	}
	s.count = popcount(s.words)
	return s, nil
}

func decodeSparse(body []byte, n int) (Set, error) {
	if len(body) < 4 {
		return Set{}, fmt.Errorf("%w: %d-byte body cannot hold the count", ErrSparseLength, len(body))
	}
	count := binary.BigEndian.Uint32(body)
	if want := 4 + 4*uint64(count); uint64(len(body)) != want {
		return Set{}, fmt.Errorf("%w: %d bytes, count %d needs %d", ErrSparseLength, len(body), count, want)
	}
	s := Set{words: make([]uint64, (n+63)/64), n: n, count: int(count)}
	// Indices ascend, so each word is complete once the next index moves
	// past it: accumulate it in a register and store it once. next is the
	// smallest index still acceptable, so one unsigned comparison checks
	// next ≤ idx < n (next ≤ n holds while no error has been found).
	var acc uint64
	cur, next := uint32(0), uint64(0)
	for rest := body[4:]; len(rest) >= 4; rest = rest[4:] {
		idx := binary.BigEndian.Uint32(rest)
		if uint64(idx)-next >= uint64(n)-next {
			return Set{}, sparseIndexError(idx, next, n)
		}
		if w := idx / 64; w != cur {
			s.words[cur] = acc
			cur, acc = w, 0
		}
		acc |= 1 << (idx % 64)
		next = uint64(idx) + 1
	}
	if acc != 0 {
		s.words[cur] = acc
	}
	return s, nil
}

func sparseIndexError(idx uint32, next uint64, n int) error {
	if uint64(idx) < next {
		return fmt.Errorf("%w: %d after %d", ErrSparseNotAscending, idx, next-1)
	}
	return fmt.Errorf("%w: index %d, registry size %d", ErrIndexBeyondRegistry, idx, n)
}

// Encode returns the canonical PresenceInputV1 encoding of s: the shorter of
// the two kinds, bitmap on a tie (§7.2 "a proposer SHOULD choose the
// smaller"; DECISIONS D17). The bitmap body is ⌈n/8⌉ bytes, the sparse body
// 4 + 4·|s| bytes.
func Encode(s Set) []byte {
	k := KindBitmap
	if sparseBodyLen(s) < bitmapBodyLen(s) {
		k = KindSparse
	}
	b, _ := EncodeKind(s, k) // k is valid
	return b
}

// EncodeKind encodes s with the given kind, canonical or not. For any valid
// input b of kind k, EncodeKind(Decode(b, n), k) reproduces b byte for byte
// (§7.2: either kind is a valid encoding of the set). An unknown kind is an
// error wrapping [ErrUnknownKind].
func EncodeKind(s Set, k Kind) ([]byte, error) {
	switch k {
	case KindBitmap:
		b := make([]byte, 2, 2+bitmapBodyLen(s))
		b[0], b[1] = Version, byte(k)
		for i := 0; i < bitmapBodyLen(s); i++ {
			b = append(b, byte(s.words[i/8]>>(8*(i%8))))
		}
		return b, nil
	case KindSparse:
		b := make([]byte, 2, 2+sparseBodyLen(s))
		b[0], b[1] = Version, byte(k)
		b = binary.BigEndian.AppendUint32(b, uint32(s.count))
		for _, i := range s.Indices() {
			b = binary.BigEndian.AppendUint32(b, uint32(i))
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: 0x%02x", ErrUnknownKind, byte(k))
}

func bitmapBodyLen(s Set) int { return (s.n + 7) / 8 }
func sparseBodyLen(s Set) int { return 4 + 4*s.count }

// Block-validity sentinels of the §7.2 flag-scoped rules.
var (
	// ErrBlockPresenceInvalid: under §7.2 rule 2 (active Mode B) the block's
	// PresenceInput field is absent or malformed, so the block is invalid.
	// It is wrapped together with the cause ([ErrFieldAbsent] or a
	// malformation sentinel).
	ErrBlockPresenceInvalid = errors.New("presence: block invalid: PresenceInputV1 absent or malformed in active Mode B")
	// ErrFieldAbsent: the block carries no PresenceInputV1 field (§7.2 rule 2
	// "absent").
	ErrFieldAbsent = errors.New("presence: PresenceInputV1 field absent")
)

// Source says where PresenceInput(H) comes from under the §7.2 rules.
type Source uint8

// The three sources, one per §7.2 validity rule.
const (
	// SourceNone (rule 1): CIP11_PRESENT_FIRST_ENABLED is off. The live
	// present set is empty; the field is never a validity requirement.
	SourceNone Source = iota
	// SourceBlockField (rule 2): active Mode B. The live present set is the
	// decoded proposer field.
	SourceBlockField
	// SourceModeAState (rule 3): Mode A is effective. The proposer field is
	// ignored; PresenceInput(H) = { runner | presence_proven_until[runner] ≥ H }
	// from parent state (§8.3), which the caller derives — not this package.
	SourceModeAState
)

// BlockPresence is the outcome of [ResolveBlockPresence] for one block: the
// §7.2 read-point value of PresenceInput(H) and its source.
type BlockPresence struct {
	Source Source
	// Present is the live present set: the decoded field for
	// SourceBlockField; the empty set over the registry otherwise (for
	// SourceModeAState the caller substitutes the state-derived set).
	Present Set
	// Shadow is set only under rule 1 with CIP11_PRESENCE_SHADOW_ENABLED:
	// the decoded field for shadow logging, never for selection. HasShadow
	// reports whether it decoded; otherwise ShadowErr says why not
	// (ErrFieldAbsent or a malformation).
	Shadow    Set
	HasShadow bool
	ShadowErr error
}

// ResolveBlockPresence applies the §7.2 flag- and mode-scoped validity rules
// to the block's PresenceInputV1 field, decoding it once against
// |registry(H−1)| = registrySize (the §7.2 read-point).
//
// field is the proposer's literal bytes; nil means the block has no field (a
// non-nil empty slice is a present but malformed field — every rule treats
// the two alike except for the error reported). modeAEffective is the §8.4
// activation guard as a whole, p.ModeAEffective(effectiveK): the flag alone is
// not sufficient.
//
//   - Rule 1, p.PresentFirstEnabled false: never an error. Present is empty;
//     with p.PresenceShadowEnabled the field is decoded into Shadow. CIP-11
//     selection is inactive in this phase, so this rule takes precedence over
//     modeAEffective.
//   - Rule 2, present-first on and Mode A not effective: exactly one
//     well-formed field is required; an absent or malformed one returns an
//     error wrapping [ErrBlockPresenceInvalid] and the cause.
//   - Rule 3, present-first on and Mode A effective: the field is ignored
//     (it may be absent or even malformed) and Source is SourceModeAState.
//
// A registrySize out of range returns an error wrapping [ErrRegistrySize]
// under every rule: it is a caller error, not a property of the block.
func ResolveBlockPresence(p cip11.Params, modeAEffective bool, field []byte, registrySize int) (BlockPresence, error) {
	empty, err := emptySet(registrySize)
	if err != nil {
		return BlockPresence{}, err
	}
	switch {
	case !p.PresentFirstEnabled:
		bp := BlockPresence{Source: SourceNone, Present: empty}
		if p.PresenceShadowEnabled {
			bp.Shadow, bp.ShadowErr = decodeField(field, registrySize)
			bp.HasShadow = bp.ShadowErr == nil
		}
		return bp, nil
	case modeAEffective:
		return BlockPresence{Source: SourceModeAState, Present: empty}, nil
	}
	s, err := decodeField(field, registrySize)
	if err != nil {
		return BlockPresence{}, fmt.Errorf("%w: %w", ErrBlockPresenceInvalid, err)
	}
	return BlockPresence{Source: SourceBlockField, Present: s}, nil
}

func decodeField(field []byte, n int) (Set, error) {
	if field == nil {
		return Set{}, ErrFieldAbsent
	}
	return Decode(field, n)
}
