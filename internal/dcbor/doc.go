// Package dcbor is the one home of the CIP-11 r1.3.1 §12.6 deterministic
// CBOR profile (DECISIONS D7–D9, D11), shared by the wire frames, the
// ConsumedSeedsV1 block field and the PendingSelectionV1 record.
//
// Encoding is RFC 8949 §4.2.1 core deterministic encoding, done by
// github.com/fxamacker/cbor/v2: shortest-form heads, definite lengths, map
// keys sorted bytewise, no tags; nil slices encode as empty containers.
// Schemas are Go structs whose fields carry `cbor:"N,keyasint"` tags, N being
// the zero-based declaration position of the field (D7).
//
// Decoding is strict (D9): [Codec.Unmarshal] accepts exactly the bytes its
// own encoding of the decoded value reproduces. The library's strict decode
// options reject truncation, malformed heads, indefinite lengths, tags,
// duplicate and unknown keys, invalid UTF-8 and type mismatches; what the
// library accepts is re-encoded and compared byte for byte, and a
// difference is classified (non-shortest heads, unsorted keys, missing
// keys, wrong byte-string lengths, null or undefined in place of a value);
// bytes after the item come last. Every defect wraps its own exported
// sentinel, so callers tell them apart with errors.Is and wrap them with %w
// rather than defining their own.
//
// The package holds no state: [New] builds the immutable library modes once
// and callers keep the [Codec] where it is used repeatedly. No input panics.
package dcbor
