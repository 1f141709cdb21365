package conformance

import "github.com/cip11/cip11/internal/dcbor"

// dcborSentinels lists the §12.6 deterministic-CBOR profile defects
// (package internal/dcbor, DECISIONS D9) that the wire, seed and selection
// decoders wrap. They come last: a consumer's own sentinel, if an error
// carries one, is the more specific name.
func dcborSentinels() []Sentinel {
	return []Sentinel{
		{"ErrTruncated", dcbor.ErrTruncated},
		{"ErrTrailingBytes", dcbor.ErrTrailingBytes},
		{"ErrMalformed", dcbor.ErrMalformed},
		{"ErrNonShortestInt", dcbor.ErrNonShortestInt},
		{"ErrIndefiniteLength", dcbor.ErrIndefiniteLength},
		{"ErrTag", dcbor.ErrTag},
		{"ErrUnexpectedType", dcbor.ErrUnexpectedType},
		{"ErrIntRange", dcbor.ErrIntRange},
		{"ErrInvalidUTF8", dcbor.ErrInvalidUTF8},
		{"ErrKeyOrder", dcbor.ErrKeyOrder},
		{"ErrDuplicateKey", dcbor.ErrDuplicateKey},
		{"ErrUnknownKey", dcbor.ErrUnknownKey},
		{"ErrMissingKey", dcbor.ErrMissingKey},
		{"ErrByteLength", dcbor.ErrByteLength},
		{"ErrNotCanonical", dcbor.ErrNotCanonical},
	}
}
