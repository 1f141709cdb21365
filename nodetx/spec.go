package nodetx

import (
	"encoding/binary"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
)

// JobSpec is the devnet's job_spec: what the node's codec would carry as
// the opaque P of a JobAssignment (D16). Its encoding is
//
//	"C11J" ‖ 0x01 ‖ submitter (20) ‖ job_kind (1) ‖ runners (4, BE) ‖
//	timeout_blocks (8, BE) ‖ work_ms (4, BE) ‖ nonce (8, BE) ‖
//	payload_len (2, BE) ‖ payload
//
// and job_id = keccak256(JobIDDomain ‖ P).
type JobSpec struct {
	Submitter     cip11.Address
	Kind          uint8
	Runners       uint32 // M = verification.runners
	TimeoutBlocks uint64
	WorkMillis    uint32 // the demo executor's work time (0: the runner's default)
	Nonce         uint64
	Payload       []byte
}

// JobIDDomain prefixes the job_id preimage.
const JobIDDomain = "cip11-devnet-job/v1"

const (
	specMagic     = "C11J"
	specHeaderLen = 4 + 1 + 20 + 1 + 4 + 8 + 4 + 8 + 2
	// MaxPayload bounds a job payload.
	MaxPayload = 4096
)

// Check applies the submit-time rules: M ≥ 1 (and ≤ 64 here),
// timeout_blocks ≥ 1, a consensus job_kind (§9.4), a bounded payload.
func (s *JobSpec) Check() error {
	switch {
	case s.Runners == 0 || s.Runners > 64:
		return fmt.Errorf("%w: runners %d (1 … 64)", ErrBadRequest, s.Runners)
	case s.TimeoutBlocks == 0 || s.TimeoutBlocks > 1_000_000:
		return fmt.Errorf("%w: timeout_blocks %d (1 … 1000000)", ErrBadRequest, s.TimeoutBlocks)
	case !mru.JobKind(s.Kind).Valid():
		return fmt.Errorf("%w: job_kind %d is not a §9.4 job kind", ErrBadRequest, s.Kind)
	case len(s.Payload) > MaxPayload:
		return fmt.Errorf("%w: payload of %d bytes (max %d)", ErrBadRequest, len(s.Payload), MaxPayload)
	case s.WorkMillis > 600_000:
		return fmt.Errorf("%w: work_ms %d (max 600000)", ErrBadRequest, s.WorkMillis)
	}
	return nil
}

// Encode is P.
func (s *JobSpec) Encode() []byte {
	b := make([]byte, 0, specHeaderLen+len(s.Payload))
	b = append(b, specMagic...)
	b = append(b, 1)
	b = append(b, s.Submitter[:]...)
	b = append(b, s.Kind)
	b = binary.BigEndian.AppendUint32(b, s.Runners)
	b = binary.BigEndian.AppendUint64(b, s.TimeoutBlocks)
	b = binary.BigEndian.AppendUint32(b, s.WorkMillis)
	b = binary.BigEndian.AppendUint64(b, s.Nonce)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Payload)))
	return append(b, s.Payload...)
}

// ID is the job_id of the spec.
func (s *JobSpec) ID() cip11.Hash { return cip11.Keccak256([]byte(JobIDDomain), s.Encode()) }

// DecodeJobSpec strictly decodes P.
func DecodeJobSpec(p []byte) (*JobSpec, error) {
	if len(p) < specHeaderLen || string(p[:4]) != specMagic || p[4] != 1 {
		return nil, fmt.Errorf("%w: not a devnet job spec", ErrBadRequest)
	}
	s := &JobSpec{}
	copy(s.Submitter[:], p[5:25])
	s.Kind = p[25]
	s.Runners = binary.BigEndian.Uint32(p[26:30])
	s.TimeoutBlocks = binary.BigEndian.Uint64(p[30:38])
	s.WorkMillis = binary.BigEndian.Uint32(p[38:42])
	s.Nonce = binary.BigEndian.Uint64(p[42:50])
	n := int(binary.BigEndian.Uint16(p[50:52]))
	if len(p) != specHeaderLen+n {
		return nil, fmt.Errorf("%w: job spec payload length %d does not match", ErrBadRequest, n)
	}
	s.Payload = append([]byte(nil), p[specHeaderLen:]...)
	return s, s.Check()
}

// SpecCodec is the runner's wire.JobSpecDecoder for devnet specs.
type SpecCodec struct{}

// DecodeJobSpec implements wire.JobSpecDecoder.
func (SpecCodec) DecodeJobSpec(p []byte) error {
	_, err := DecodeJobSpec(p)
	return err
}
