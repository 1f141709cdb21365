package wire

import "errors"

// Envelope errors (§12.1). Each is a protocol error: the peer answers
// Goodbye{ProtocolError} if it can, else closes. A payload that is not in
// the §12.6 deterministic-CBOR profile (DECISIONS D7–D9) fails with a
// sentinel of package internal/dcbor (ErrTruncated, ErrNonShortestInt,
// ErrMissingKey, ErrByteLength, …), wrapped with the frame type; those are
// protocol errors too.
var (
	ErrFrameEmpty         = errors.New("wire: frame length is 0")
	ErrFrameTooLarge      = errors.New("wire: frame length exceeds MAX_FRAME_BYTES")
	ErrFrameTruncated     = errors.New("wire: frame truncated")
	ErrFrameUnknownType   = errors.New("wire: unknown frame type")
	ErrFrameTrailingBytes = errors.New("wire: bytes after the frame")
)

// Field-level rules beyond the CBOR profile (§10.4 bounds, §12.6 enum tables).
var (
	// ErrFieldRange: JobProgress.fraction above 100 (§10.4). An integer too
	// wide for its field's type is dcbor's ErrIntRange.
	ErrFieldRange  = errors.New("wire: integer out of range for its field")
	ErrEnumUnknown = errors.New("wire: unknown enum discriminant")
)

// Key and signature errors (§12.6 scheme-tagged keys, DECISIONS D4–D6).
var (
	ErrPubKeyScheme      = errors.New("wire: unknown PubKey scheme_id")
	ErrPubKeyLength      = errors.New("wire: PubKey length does not match its scheme")
	ErrPubKeyRole        = errors.New("wire: PubKey scheme does not match the signer role")
	ErrPubKeyPoint       = errors.New("wire: PubKey is not a valid curve point")
	ErrSigLength         = errors.New("wire: signature length does not match the signer role")
	ErrSigRecoveryID     = errors.New("wire: secp256k1 recovery id is not 0 or 1")
	ErrSigHighS          = errors.New("wire: secp256k1 signature s is not low-s")
	ErrSigInvalid        = errors.New("wire: signature does not verify")
	ErrSigSignerMismatch = errors.New("wire: signature recovers a different runner")
)

// Handshake, versioning and liveness errors (§6.2, §6.3, §12.3, §12.5).
var (
	ErrUnsupportedVersion     = errors.New("wire: unsupported protocol version")
	ErrWrongChain             = errors.New("wire: chain_id mismatch")
	ErrValidatorSetMismatch   = errors.New("wire: (subset_epoch, validator_set_hash) selects no active snapshot")
	ErrHelloRole              = errors.New("wire: peer claims the same role as this party")
	ErrHelloAckParty          = errors.New("wire: HelloAck party differs from the peer's Hello")
	ErrNotInSubset            = errors.New("wire: validator is not in the runner's connectivity subset")
	ErrPingNonceNotIncreasing = errors.New("wire: HeartbeatPing nonce not strictly increasing")
	ErrPongNonceMismatch      = errors.New("wire: HeartbeatPong nonce_echo does not echo the outstanding ping")
	ErrGoodbyeUnsigned        = errors.New("wire: Goodbye after mutual auth carries no signature")
)

// Job-delivery errors (§10.1–§10.5). Every §10.1 error maps to
// JobAck{Reject(UnverifiableAssignment)} via [AckFor].
var (
	ErrJobSpecHashMismatch     = errors.New("wire: job_spec_hash does not match the carried job_spec")
	ErrJobSpecDecode           = errors.New("wire: job_spec does not decode")
	ErrAssignmentHashMismatch  = errors.New("wire: assignment_hash does not match the recomputed preimage")
	ErrRunnerKeyNotOwn         = errors.New("wire: runner_pubkey is not this runner's key")
	ErrValidatorNotPeer        = errors.New("wire: validator_pubkey is not the connection's validator")
	ErrValidatorNotInSnapshot  = errors.New("wire: validator key is not in the active snapshot")
	ErrAssignmentNotFinal      = errors.New("wire: assignment_height is not finalized in this runner's view")
	ErrAssignmentConflict      = errors.New("wire: assignment for an accepted job_id differs in a non-validator field")
	ErrAckUnknownAssignment    = errors.New("wire: JobAck assignment_hash matches no assignment sent for job_id on this connection")
	ErrCancelUnknownAssignment = errors.New("wire: JobCancel assignment_hash matches no in-flight assignment for job_id")
	ErrResultTxDecode          = errors.New("wire: tx_bytes does not decode as a transaction")
	ErrResultSigner            = errors.New("wire: result transaction is not signed by the connection's runner")
	ErrResultInstruction       = errors.New("wire: result transaction instruction does not match the frame")
	ErrResultJobID             = errors.New("wire: result transaction job_id differs from the frame job_id")
	ErrResultTxInvalid         = errors.New("wire: result transaction fails node validation")
)
