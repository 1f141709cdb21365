package conformance

import (
	"encoding/json"
	"strconv"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

// wireFunctions lists the vector functions owned by package wire.
func wireFunctions() []Function {
	return []Function{
		{
			Name: "frame", Spec: "§12.1, §12.2",
			Description: "Frame envelope and deterministic-CBOR payload (DECISIONS D7–D9). Positive vectors: type and fields (spec field names; bytes hex, u64 decimal strings, enums by variant name, absent Option null) encode to frame, and frame decodes to fields. Negative vectors: frame (hex) is rejected with error (MAX_FRAME_BYTES = 2097152), or fields fail to encode.",
			Generate:    genFrameVectors, Eval: evalFrameVector,
		},
		{
			Name: "digest", Spec: "§12.6",
			Description: "Every §12.6 preimage digest (DECISIONS D2, D6, D10, D16). preimage names the §12.6 line; fields carry the frame values and the connection context (chain_id, version, runner_pubkey, validator_pubkey, validator_set_hash, subset_epoch, channel_binding) from which connection_id is derived. Outputs: digest, and where defined connection_id and canonical_frame_body.",
			Generate:    genDigestVectors, Eval: evalDigestVector,
		},
		{
			Name: "signature", Spec: "§12.6",
			Description: "Role-scheme signatures over a 32-byte digest (DECISIONS D4, D5): runner secp256k1 r‖s‖v with v ∈ {0,1} and low-s, verified by recovery (address = recovered D4 address); validator Ed25519 (RFC 8032). valid reports whether the signature verifies under public_key; malformed inputs are errors.",
			Generate:    genSignatureVectors, Eval: evalSignatureVector,
		},
		{
			Name: "frame_check", Spec: "§6.2, §6.3, §10.1–§10.5, §12.3, §12.5",
			Description: "Receiver-side checks decidable from frame bytes and connection context: handshake admission, heartbeat nonces, JobAssignment (returns the JobAck status), JobAck, JobCancel, result frames (tx_bytes in the reference MemTx encoding: signer 20 ‖ kind 1 ‖ job_id 32 ‖ valid 1), Goodbye, frame signatures.",
			Generate:    genCheckVectors, Eval: evalCheckVector,
		},
	}
}

// wireSentinels lists package wire's exported sentinels for negative vectors.
func wireSentinels() []Sentinel {
	return []Sentinel{
		// Specific before general: several errors wrap a field name only.
		{"ErrFrameEmpty", wire.ErrFrameEmpty},
		{"ErrFrameTooLarge", wire.ErrFrameTooLarge},
		{"ErrFrameTruncated", wire.ErrFrameTruncated},
		{"ErrFrameUnknownType", wire.ErrFrameUnknownType},
		{"ErrFrameTrailingBytes", wire.ErrFrameTrailingBytes},
		{"ErrFieldRange", wire.ErrFieldRange},
		{"ErrEnumUnknown", wire.ErrEnumUnknown},
		{"ErrPubKeyScheme", wire.ErrPubKeyScheme},
		{"ErrPubKeyLength", wire.ErrPubKeyLength},
		{"ErrPubKeyRole", wire.ErrPubKeyRole},
		{"ErrPubKeyPoint", wire.ErrPubKeyPoint},
		{"ErrSigLength", wire.ErrSigLength},
		{"ErrSigRecoveryID", wire.ErrSigRecoveryID},
		{"ErrSigHighS", wire.ErrSigHighS},
		{"ErrSigInvalid", wire.ErrSigInvalid},
		{"ErrSigSignerMismatch", wire.ErrSigSignerMismatch},
		{"ErrUnsupportedVersion", wire.ErrUnsupportedVersion},
		{"ErrWrongChain", wire.ErrWrongChain},
		{"ErrValidatorSetMismatch", wire.ErrValidatorSetMismatch},
		{"ErrHelloRole", wire.ErrHelloRole},
		{"ErrHelloAckParty", wire.ErrHelloAckParty},
		{"ErrNotInSubset", wire.ErrNotInSubset},
		{"ErrPingNonceNotIncreasing", wire.ErrPingNonceNotIncreasing},
		{"ErrPongNonceMismatch", wire.ErrPongNonceMismatch},
		{"ErrGoodbyeUnsigned", wire.ErrGoodbyeUnsigned},
		{"ErrJobSpecHashMismatch", wire.ErrJobSpecHashMismatch},
		{"ErrJobSpecDecode", wire.ErrJobSpecDecode},
		{"ErrAssignmentHashMismatch", wire.ErrAssignmentHashMismatch},
		{"ErrRunnerKeyNotOwn", wire.ErrRunnerKeyNotOwn},
		{"ErrValidatorNotPeer", wire.ErrValidatorNotPeer},
		{"ErrValidatorNotInSnapshot", wire.ErrValidatorNotInSnapshot},
		{"ErrAssignmentNotFinal", wire.ErrAssignmentNotFinal},
		{"ErrAssignmentConflict", wire.ErrAssignmentConflict},
		{"ErrAckUnknownAssignment", wire.ErrAckUnknownAssignment},
		{"ErrCancelUnknownAssignment", wire.ErrCancelUnknownAssignment},
		{"ErrResultTxDecode", wire.ErrResultTxDecode},
		{"ErrResultSigner", wire.ErrResultSigner},
		{"ErrResultInstruction", wire.ErrResultInstruction},
		{"ErrResultJobID", wire.ErrResultJobID},
		{"ErrResultTxInvalid", wire.ErrResultTxInvalid},
	}
}

// ---- fixtures shared by the wire generators ----

// wireRunner and wireValidator are the vector identities: secrets and seeds
// are keccak256 of fixed labels, so anyone can rebuild them.
func wireRunner(i int) *wire.RunnerKey {
	k, err := wire.NewRunnerKey(cip11.Keccak256([]byte("cip11/vectors/runner-" + strconv.Itoa(i))))
	if err != nil {
		panic(err) // a fixed non-zero label hash; unreachable
	}
	return k
}

func wireValidator(i int) *wire.ValidatorKey {
	return wire.NewValidatorKey(cip11.Keccak256([]byte("cip11/vectors/validator-" + strconv.Itoa(i))))
}

func label(s string) cip11.Hash { return cip11.Keccak256([]byte(s)) }

// wireConn is the reference connection between runner 1 and validator 1.
func wireConn() wire.Conn {
	return wire.Conn{
		ChainID: 0xC0B0, Version: wire.Version,
		RunnerPubKey: wireRunner(1).PubKey(), ValidatorPubKey: wireValidator(1).PubKey(),
		ValidatorSetHash: label("cip11/vectors/validator-set-0"), SubsetEpoch: 0,
		ChannelBinding: label("cip11/vectors/channel-binding-1"),
	}
}

func wireSession(c wire.Conn) *wire.Session {
	s, err := wire.NewSession(c)
	if err != nil {
		panic(err) // fixtures are well-formed
	}
	return s
}

func strp(s string) *string { return &s }
func u64p(v uint64) *uint64 { return &v }

func mustEncode(f wire.Frame) []byte {
	b, err := wire.Encode(f)
	if err != nil {
		panic(err)
	}
	return b
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
