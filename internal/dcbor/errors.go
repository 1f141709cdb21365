package dcbor

import "errors"

// Profile defects (§12.6 deterministic CBOR, DECISIONS D9). Every decoding
// error of [Codec.Unmarshal] wraps exactly one of these.
var (
	// ErrTruncated: the input ends inside an item, or a length or count
	// announces more than the input holds (including an empty input).
	ErrTruncated = errors.New("dcbor: CBOR item truncated")
	// ErrTrailingBytes: bytes follow the top-level item.
	ErrTrailingBytes = errors.New("dcbor: bytes after the CBOR item")
	// ErrMalformed: not well-formed CBOR (reserved additional information
	// 28–30, a two-byte simple value below 32, a stray break code).
	ErrMalformed = errors.New("dcbor: malformed CBOR")
	// ErrNonShortestInt: an integer, length, count or map key is not in
	// its shortest form.
	ErrNonShortestInt = errors.New("dcbor: CBOR head not in shortest form")
	// ErrIndefiniteLength: an indefinite-length string, array or map.
	ErrIndefiniteLength = errors.New("dcbor: indefinite-length CBOR item")
	// ErrTag: a CBOR tag anywhere.
	ErrTag = errors.New("dcbor: CBOR tag")
	// ErrUnexpectedType: an item of the wrong type for its place in the
	// schema: another major type, a float, null, undefined or another
	// simple value where the schema has none, or nesting deeper than any
	// schema has.
	ErrUnexpectedType = errors.New("dcbor: CBOR item of the wrong type")
	// ErrIntRange: an unsigned integer does not fit its field's width
	// (e.g. a u16 field above 65535).
	ErrIntRange = errors.New("dcbor: integer does not fit its field")
	// ErrInvalidUTF8: a text string is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("dcbor: text string is not valid UTF-8")
	// ErrKeyOrder: map keys are not in ascending bytewise order.
	ErrKeyOrder = errors.New("dcbor: map keys not in canonical order")
	// ErrDuplicateKey: a map key appears twice.
	ErrDuplicateKey = errors.New("dcbor: duplicate map key")
	// ErrUnknownKey: a map carries a key the schema does not declare.
	ErrUnknownKey = errors.New("dcbor: unknown map key")
	// ErrMissingKey: a map lacks a key the schema declares.
	ErrMissingKey = errors.New("dcbor: missing map key")
	// ErrByteLength: a byte string is not the exact length its field requires.
	ErrByteLength = errors.New("dcbor: byte string of the wrong length")
	// ErrNotCanonical: the re-encoding differs from the input in a way none
	// of the sentinels above describes (the D9 contract itself).
	ErrNotCanonical = errors.New("dcbor: re-encoding differs from the input")
)

// ErrCodec wraps a failure to build the library modes or to encode a value
// of an unsupported Go type: a programming error, never an input defect.
var ErrCodec = errors.New("dcbor: codec misuse")
