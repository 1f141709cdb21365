package wire

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
)

// FrameType is the §12.2 frame-type byte.
type FrameType byte

// §12.2 frame types.
const (
	TypeHello              FrameType = 0x01
	TypeHelloAck           FrameType = 0x02
	TypeHeartbeatPing      FrameType = 0x10
	TypeHeartbeatPong      FrameType = 0x11
	TypeBackpressureSignal FrameType = 0x12
	TypeCapabilityDelta    FrameType = 0x13
	// TypePresenceReceiptRequest and TypePresenceReceipt are the Mode-A
	// receipt frames of minor version 0x0101 ([VersionReceipts], §8.3,
	// SPEC-NOTES N18): §12.2 names no frame for them. They are legal only on
	// a connection whose negotiated version is at least 0x0101
	// ([FrameType.MinVersion]); below it they are unknown types.
	TypePresenceReceiptRequest FrameType = 0x14
	TypePresenceReceipt        FrameType = 0x15
	TypeJobAssignment          FrameType = 0x20
	TypeJobAck                 FrameType = 0x21
	TypeJobProgress            FrameType = 0x22
	TypeJobResult              FrameType = 0x23
	TypeJobCancel              FrameType = 0x24
	TypeJobResultCommit        FrameType = 0x25
	TypeGoodbye                FrameType = 0xF0
)

// Frame is one of the thirteen §12.2 frame bodies, or one of the two
// 0x0101 receipt frames (SPEC-NOTES N18). Implementations are the pointer
// types *Hello … *Goodbye, *PresenceReceiptRequest and *PresenceReceipt;
// nothing outside this package implements it.
type Frame interface {
	// Type returns the §12.2 type byte.
	Type() FrameType
	// wireValue returns the value whose §12.6 profile encoding is the
	// payload, or fails if the frame holds a value no decoder would accept
	// (so encode∘decode = id).
	wireValue(c dcbor.Codec) (any, error)
	// decodePayload strictly decodes a payload into the frame, leaving it
	// untouched on error.
	decodePayload(c dcbor.Codec, payload []byte) error
}

// NewFrame returns a zero frame of type t (§12.2), or ErrFrameUnknownType.
// It knows every type of [VersionReceipts]; [NewFrameAt] applies a
// connection's version.
func NewFrame(t FrameType) (Frame, error) {
	switch t {
	case TypeHello:
		return new(Hello), nil
	case TypeHelloAck:
		return new(HelloAck), nil
	case TypeHeartbeatPing:
		return new(HeartbeatPing), nil
	case TypeHeartbeatPong:
		return new(HeartbeatPong), nil
	case TypeBackpressureSignal:
		return new(BackpressureSignal), nil
	case TypeCapabilityDelta:
		return new(CapabilityDelta), nil
	case TypePresenceReceiptRequest:
		return new(PresenceReceiptRequest), nil
	case TypePresenceReceipt:
		return new(PresenceReceipt), nil
	case TypeJobAssignment:
		return new(JobAssignment), nil
	case TypeJobAck:
		return new(JobAck), nil
	case TypeJobProgress:
		return new(JobProgress), nil
	case TypeJobResult:
		return new(JobResult), nil
	case TypeJobCancel:
		return new(JobCancel), nil
	case TypeJobResultCommit:
		return new(JobResultCommit), nil
	case TypeGoodbye:
		return new(Goodbye), nil
	}
	return nil, fmt.Errorf("%w: 0x%02x", ErrFrameUnknownType, byte(t))
}

// MinVersion is the lowest negotiated version on which t is a known type:
// 0x0101 for the two receipt frames (SPEC-NOTES N18), [Version] for the
// §12.2 table.
func (t FrameType) MinVersion() uint16 {
	if t == TypePresenceReceiptRequest || t == TypePresenceReceipt {
		return VersionReceipts
	}
	return Version
}

// NewFrameAt is [NewFrame] on a connection whose negotiated version is
// version (§12.3): a type added by a later minor is ErrFrameUnknownType
// there, exactly as before that minor existed.
func NewFrameAt(t FrameType, version uint16) (Frame, error) {
	if VersionMajor(version) != VersionMajor(t.MinVersion()) || version < t.MinVersion() {
		return nil, fmt.Errorf("%w: 0x%02x on a 0x%04x connection", ErrFrameUnknownType, byte(t), version)
	}
	return NewFrame(t)
}

// String returns the frame name, or the byte in hex if unknown (§12.2).
func (t FrameType) String() string {
	if f, err := NewFrame(t); err == nil {
		return fmt.Sprintf("%T", f)[6:] // "*wire.Hello" → "Hello"
	}
	return fmt.Sprintf("0x%02x", byte(t))
}

// Hello is the §6.2 handshake challenge (unsigned, §12.6).
type Hello struct {
	Version          uint16     `json:"version"`
	ChainID          uint64     `json:"chain_id,string"`
	ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
	SubsetEpoch      uint64     `json:"subset_epoch,string"`
	PartyPubKey      PubKey     `json:"party_pubkey"`
	PartyRole        Role       `json:"party_role"`
	BlockHeight      uint64     `json:"block_height,string"`
	ChallengeNonce   cip11.Hash `json:"challenge_nonce"`
}

// HelloAck is the §6.2 handshake response; SignedChallenge is over the §12.6
// HelloAck preimage and its length follows PartyRole.
type HelloAck struct {
	Version          uint16     `json:"version"`
	ChainID          uint64     `json:"chain_id,string"`
	ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
	SubsetEpoch      uint64     `json:"subset_epoch,string"`
	PartyPubKey      PubKey     `json:"party_pubkey"`
	PartyRole        Role       `json:"party_role"`
	BlockHeight      uint64     `json:"block_height,string"`
	SignedChallenge  Sig        `json:"signed_challenge"`
}

// HeartbeatPing is the §6.3 runner → validator liveness frame.
type HeartbeatPing struct {
	BlockHeight uint64    `json:"block_height,string" cbor:"0,keyasint"`
	Nonce       uint64    `json:"nonce,string" cbor:"1,keyasint"`
	Signed      RunnerSig `json:"signed" cbor:"2,keyasint"`
}

// HeartbeatPong is the §6.3 validator → runner liveness answer.
type HeartbeatPong struct {
	BlockHeight     uint64       `json:"block_height,string" cbor:"0,keyasint"`
	NonceEcho       uint64       `json:"nonce_echo,string" cbor:"1,keyasint"`
	AcceptingNew    bool         `json:"accepting_new" cbor:"2,keyasint"`
	ValidatorSigned ValidatorSig `json:"validator_signed" cbor:"3,keyasint"`
}

// BackpressureSignal is the §6.4 runner capacity signal.
type BackpressureSignal struct {
	BlockHeight   uint64    `json:"block_height,string" cbor:"0,keyasint"`
	ActiveJobs    uint32    `json:"active_jobs" cbor:"1,keyasint"`
	MaxConcurrent uint32    `json:"max_concurrent" cbor:"2,keyasint"`
	AcceptingNew  bool      `json:"accepting_new" cbor:"3,keyasint"`
	Reason        *string   `json:"reason" cbor:"4,keyasint"`
	Signed        RunnerSig `json:"signed" cbor:"5,keyasint"`
}

// CapabilityDelta is the §6.5 advisory capability/entitlement update.
type CapabilityDelta struct {
	BlockHeight         uint64       `json:"block_height,string" cbor:"0,keyasint"`
	AddedCapabilities   []string     `json:"added_capabilities" cbor:"1,keyasint"`
	RemovedCapabilities []string     `json:"removed_capabilities" cbor:"2,keyasint"`
	AddedEntitlements   []cip11.Hash `json:"added_entitlements" cbor:"3,keyasint"`
	RemovedEntitlements []cip11.Hash `json:"removed_entitlements" cbor:"4,keyasint"`
	Signed              RunnerSig    `json:"signed" cbor:"5,keyasint"`
}

// JobAssignment is the §10.1 push; JobSpec is the opaque
// cowboy-protocol-codec encoding P (DECISIONS D16).
type JobAssignment struct {
	JobID            cip11.Hash   `json:"job_id"`
	JobSpec          Bytes        `json:"job_spec"`
	JobSpecHash      cip11.Hash   `json:"job_spec_hash"`
	AssignmentHeight uint64       `json:"assignment_height,string"`
	AssignmentHash   cip11.Hash   `json:"assignment_hash"`
	DeadlineBlock    uint64       `json:"deadline_block,string"`
	RunnerPubKey     PubKey       `json:"runner_pubkey"`
	ValidatorPubKey  PubKey       `json:"validator_pubkey"`
	ValidatorSigned  ValidatorSig `json:"validator_signed"`
}

// JobAck is the §10.2 runner acknowledgment.
type JobAck struct {
	JobID          cip11.Hash `json:"job_id"`
	AssignmentHash cip11.Hash `json:"assignment_hash"`
	Status         AckStatus  `json:"status"`
	Reason         *string    `json:"reason"`
	Signed         RunnerSig  `json:"signed"`
}

// JobProgress is the §10.4 informational progress frame (unsigned).
type JobProgress struct {
	JobID    cip11.Hash `json:"job_id" cbor:"0,keyasint"`
	Fraction uint8      `json:"fraction" cbor:"1,keyasint"` // 0–100
	Detail   *string    `json:"detail" cbor:"2,keyasint"`
}

// JobResult carries a runner-signed JobResultSubmit transaction (§10.3).
type JobResult struct {
	JobID   cip11.Hash `json:"job_id" cbor:"0,keyasint"`
	TxBytes Bytes      `json:"tx_bytes" cbor:"1,keyasint"`
}

// JobCancel is the §10.5 validator cancellation.
type JobCancel struct {
	JobID           cip11.Hash   `json:"job_id" cbor:"0,keyasint"`
	AssignmentHash  cip11.Hash   `json:"assignment_hash" cbor:"1,keyasint"`
	Reason          CancelReason `json:"reason" cbor:"2,keyasint"`
	ValidatorSigned ValidatorSig `json:"validator_signed" cbor:"3,keyasint"`
}

// JobResultCommit carries a runner-signed JobResultCommit transaction (§10.3).
type JobResultCommit struct {
	JobID   cip11.Hash `json:"job_id" cbor:"0,keyasint"`
	TxBytes Bytes      `json:"tx_bytes" cbor:"1,keyasint"`
}

// PresenceReceiptRequest (type 0x14, R→V, minor 0x0101) asks the validator
// for a §8.3 PresenceReceipt: the runner "indicates it will seek a Mode-A
// certificate". Nonce is echoed as the receipt's nonce_echo. It is
// unsigned: the connection authenticates it. See SPEC-NOTES N18.
type PresenceReceiptRequest struct {
	Nonce uint64 `json:"nonce,string" cbor:"0,keyasint"`
}

// Goodbye is the §12.5 close frame; Detail, RetryAfterBlocks and Signed are nil when absent.
type Goodbye struct {
	Reason           GoodbyeReason `json:"reason"`
	Detail           *string       `json:"detail"`
	RetryAfterBlocks *uint64       `json:"retry_after_blocks,string"`
	Signed           *Sig          `json:"signed"`
}

// Type implements [Frame]. See §6.2.
func (*Hello) Type() FrameType { return TypeHello }

// Type implements [Frame]. See §6.2.
func (*HelloAck) Type() FrameType { return TypeHelloAck }

// Type implements [Frame]. See §6.3.
func (*HeartbeatPing) Type() FrameType { return TypeHeartbeatPing }

// Type implements [Frame]. See §6.3.
func (*HeartbeatPong) Type() FrameType { return TypeHeartbeatPong }

// Type implements [Frame]. See §6.4.
func (*BackpressureSignal) Type() FrameType { return TypeBackpressureSignal }

// Type implements [Frame]. See §6.5.
func (*CapabilityDelta) Type() FrameType { return TypeCapabilityDelta }

// Type implements [Frame]. See §10.1.
func (*JobAssignment) Type() FrameType { return TypeJobAssignment }

// Type implements [Frame]. See §10.2.
func (*JobAck) Type() FrameType { return TypeJobAck }

// Type implements [Frame]. See §10.4.
func (*JobProgress) Type() FrameType { return TypeJobProgress }

// Type implements [Frame]. See §10.3.
func (*JobResult) Type() FrameType { return TypeJobResult }

// Type implements [Frame]. See §10.5.
func (*JobCancel) Type() FrameType { return TypeJobCancel }

// Type implements [Frame]. See §10.3.
func (*JobResultCommit) Type() FrameType { return TypeJobResultCommit }

// Type implements [Frame]. See §8.3 and SPEC-NOTES N18.
func (*PresenceReceiptRequest) Type() FrameType { return TypePresenceReceiptRequest }

// Type implements [Frame]: a PresenceReceipt is also the body of frame
// 0x15 (V→R). See §8.3 and SPEC-NOTES N18.
func (*PresenceReceipt) Type() FrameType { return TypePresenceReceipt }

// Type implements [Frame]. See §12.5.
func (*Goodbye) Type() FrameType { return TypeGoodbye }
