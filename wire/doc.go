// Package wire is the CIP-11 r1.3.1 byte format spoken between runners and
// validators (§6, §10, §12): the §12.1 frame envelope, the thirteen §12.2
// frame bodies and the two Mode-A receipt frames of minor version 0x0101
// (§8.3, SPEC-NOTES N18) in the §12.6 deterministic-CBOR profile, the §12.6 enum
// tables, scheme-tagged keys and role-scheme signatures, every §12.6
// signature preimage, and the receiver-side checks of §6.2, §6.3, §10.1–§10.5
// and §12.5 that can be decided from bytes and connection context alone.
//
// # Envelope (§12.1)
//
// A frame is `length (u32 BE) ‖ type (u8) ‖ payload`, length = 1 + len(payload).
// [Reader] rejects length 0 and length > MAX_FRAME_BYTES from the 4-byte
// header alone, before allocating anything of the announced size; an unknown
// type is rejected before the payload is read. [Decode] does the same for a
// frame held in memory.
//
// # Payload profile (DECISIONS D7–D10)
//
// The §12.6 deterministic-CBOR profile itself lives in package
// internal/dcbor (built on github.com/fxamacker/cbor/v2); this package maps
// the frames onto it:
//
//   - The payload is a CBOR map whose keys are the unsigned integers 0…n−1,
//     the zero-based position of each field in the spec's declaration; every
//     field is present, an absent Option is null.
//   - u8…u64 → unsigned int (shortest form); bool → true/false; String →
//     text (valid UTF-8); fixed arrays, PubKey, Sig, Vec<u8> → byte string of
//     exactly the required length; Vec<T> → array.
//   - A unit enum variant is its §12.6 byte; a variant with payload is
//     `[discriminant, payload]` (AckStatus::Reject(UnverifiableAssignment) → [2, 3]).
//   - canonical_frame_body (control-v1) is the map without its `signed` key.
//
// Decoding is strict: a payload is accepted only if re-encoding it
// reproduces it byte for byte. Profile defects (non-shortest heads,
// indefinite lengths, tags, floats, simple values other than
// false/true/null, unsorted, duplicate, unknown or missing keys, wrong
// byte-string lengths, integers too wide for their field, invalid UTF-8,
// trailing bytes) each fail with their own dcbor sentinel; unknown enum
// bytes, fraction > 100 and role/scheme disagreement fail with this
// package's. Encoders refuse the same values, so decode→encode is the
// identity (fuzzed). HeartbeatPing alone is encoded by hand, to keep its
// encode+sign within about 2% of a bare signature; its bytes are pinned to
// dcbor's.
//
// # Keys and signatures (§12.6, DECISIONS D4–D6)
//
// A wire [PubKey] is `0x01 ‖ 33-byte compressed secp256k1` (runner) or
// `0x02 ‖ 32-byte Ed25519` (validator). Runner signatures are 65-byte
// `r ‖ s ‖ v`, v ∈ {0,1}, low-s required, verified by public-key recovery;
// validator signatures are Ed25519. Every signed digest is
// `keccak256(domain ‖ signer_role ‖ scheme_id ‖ fields…)`; connection-scoped
// preimages take chain_id and both keys from the authenticated [Session],
// never from the frame (§12.6 "Preimage field origins").
//
// # Purity
//
// The package does no I/O except through the io.Reader/io.Writer handed to
// [NewReader]/[NewWriter], reads no clock, starts no goroutines and holds no
// state outside its values. The node's JobSpec and Transaction codecs enter
// as the [JobSpecDecoder] and [TxDecoder]/[TxValidator] interfaces; [MemTx]
// is an in-memory reference used by tests and vectors.
package wire
