package wire

import (
	"fmt"
	"unicode/utf8"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
)

// Payload encoding and strict decoding of the thirteen §12.2 bodies (and the
// two 0x0101 receipt frames, SPEC-NOTES N18) in the
// §12.6 profile of package internal/dcbor, per DECISIONS D7 (keys =
// declaration positions, every field present), D8 (types) and D9
// (strictness). A frame whose fields map one-to-one onto D8 types carries
// its `cbor` keys itself; the others go through a small mirror struct whose
// keys, PubKeys and signatures are plain byte strings, checked here after
// the profile decode. Encoders refuse values a decoder would refuse, so
// decode→encode is the identity on every accepted payload.

func fieldErr(name string, err error) error { return fmt.Errorf("%s: %w", name, err) }

// decodeAs strictly decodes p as a T, applies check, and only then fills f:
// a failed decode never half-fills a frame.
func decodeAs[T any](c dcbor.Codec, p []byte, f *T, check func(*T) error) error {
	var v T
	if err := c.Unmarshal(p, &v); err != nil {
		return err
	}
	if check != nil {
		if err := check(&v); err != nil {
			return err
		}
	}
	*f = v
	return nil
}

func checkText(name string, s string) error {
	if !utf8.ValidString(s) {
		return fieldErr(name, dcbor.ErrInvalidUTF8)
	}
	return nil
}

func checkOptText(name string, s *string) error {
	if s != nil {
		return checkText(name, *s)
	}
	return nil
}

func checkTextList(name string, l []string) error {
	for _, s := range l {
		if err := checkText(name, s); err != nil {
			return err
		}
	}
	return nil
}

func checkRole(name string, r Role) error {
	if !r.Valid() {
		return fieldErr(name, fmt.Errorf("%w: Role byte %d", ErrEnumUnknown, r))
	}
	return nil
}

// ---- Hello / HelloAck (§6.2) ----

// helloCommonCBOR is keys 0–6, shared by Hello and HelloAck.
type helloCommonCBOR struct {
	Version          uint16     `cbor:"0,keyasint"`
	ChainID          uint64     `cbor:"1,keyasint"`
	ValidatorSetHash cip11.Hash `cbor:"2,keyasint"`
	SubsetEpoch      uint64     `cbor:"3,keyasint"`
	PartyPubKey      []byte     `cbor:"4,keyasint"`
	PartyRole        Role       `cbor:"5,keyasint"`
	BlockHeight      uint64     `cbor:"6,keyasint"`
}

type helloCBOR struct {
	helloCommonCBOR
	ChallengeNonce cip11.Hash `cbor:"7,keyasint"`
}

type helloAckCBOR struct {
	helloCommonCBOR
	SignedChallenge []byte `cbor:"7,keyasint"`
}

func helloCommonOf(version uint16, chain uint64, vsh cip11.Hash, epoch uint64, pk PubKey, role Role, height uint64) (helloCommonCBOR, error) {
	if err := checkRole("party_role", role); err != nil {
		return helloCommonCBOR{}, err
	}
	if err := pk.CheckRole(role); err != nil {
		return helloCommonCBOR{}, fieldErr("party_pubkey", err)
	}
	return helloCommonCBOR{version, chain, vsh, epoch, pk.b[:pk.n], role, height}, nil
}

// key parses and role-checks the party key.
func (h *helloCommonCBOR) key() (PubKey, error) {
	if err := checkRole("party_role", h.PartyRole); err != nil {
		return PubKey{}, err
	}
	pk, err := ParsePubKey(h.PartyPubKey)
	if err == nil {
		err = pk.CheckRole(h.PartyRole)
	}
	if err != nil {
		return PubKey{}, fieldErr("party_pubkey", err)
	}
	return pk, nil
}

func (f *Hello) wireValue(dcbor.Codec) (any, error) {
	h, err := helloCommonOf(f.Version, f.ChainID, f.ValidatorSetHash, f.SubsetEpoch, f.PartyPubKey, f.PartyRole, f.BlockHeight)
	return &helloCBOR{h, f.ChallengeNonce}, err
}

func (f *Hello) decodePayload(c dcbor.Codec, p []byte) error {
	var v helloCBOR
	if err := c.Unmarshal(p, &v); err != nil {
		return err
	}
	pk, err := v.key()
	if err != nil {
		return err
	}
	*f = Hello{v.Version, v.ChainID, v.ValidatorSetHash, v.SubsetEpoch, pk, v.PartyRole, v.BlockHeight, v.ChallengeNonce}
	return nil
}

func (f *HelloAck) wireValue(dcbor.Codec) (any, error) {
	if err := f.SignedChallenge.CheckRole(f.PartyRole); err != nil {
		return nil, fieldErr("signed_challenge", err)
	}
	h, err := helloCommonOf(f.Version, f.ChainID, f.ValidatorSetHash, f.SubsetEpoch, f.PartyPubKey, f.PartyRole, f.BlockHeight)
	return &helloAckCBOR{h, f.SignedChallenge.b[:f.SignedChallenge.n]}, err
}

func (f *HelloAck) decodePayload(c dcbor.Codec, p []byte) error {
	var v helloAckCBOR
	if err := c.Unmarshal(p, &v); err != nil {
		return err
	}
	pk, err := v.key()
	if err != nil {
		return err
	}
	sig, err := ParseSig(v.SignedChallenge)
	if err == nil {
		err = sig.CheckRole(v.PartyRole)
	}
	if err != nil {
		return fieldErr("signed_challenge", err)
	}
	*f = HelloAck{v.Version, v.ChainID, v.ValidatorSetHash, v.SubsetEpoch, pk, v.PartyRole, v.BlockHeight, sig}
	return nil
}

// ---- Heartbeats (§6.3) ----

func (f *HeartbeatPing) wireValue(dcbor.Codec) (any, error) { return f, nil }

func (f *HeartbeatPing) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, nil)
}

func (f *HeartbeatPong) wireValue(dcbor.Codec) (any, error) { return f, nil }

func (f *HeartbeatPong) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, nil)
}

// ---- Backpressure (§6.4) and CapabilityDelta (§6.5) ----

// backpressureBody is the §12.6 canonical_frame_body: the map without its
// `signed` key (DECISIONS D10).
type backpressureBody struct {
	BlockHeight   uint64  `cbor:"0,keyasint"`
	ActiveJobs    uint32  `cbor:"1,keyasint"`
	MaxConcurrent uint32  `cbor:"2,keyasint"`
	AcceptingNew  bool    `cbor:"3,keyasint"`
	Reason        *string `cbor:"4,keyasint"`
}

func (f *BackpressureSignal) check() error { return checkOptText("reason", f.Reason) }

func (f *BackpressureSignal) body() (any, error) {
	return &backpressureBody{f.BlockHeight, f.ActiveJobs, f.MaxConcurrent, f.AcceptingNew, f.Reason}, f.check()
}

func (f *BackpressureSignal) wireValue(dcbor.Codec) (any, error) { return f, f.check() }

func (f *BackpressureSignal) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, nil) // the profile decode already refuses invalid UTF-8
}

// capabilityBody is the §12.6 canonical_frame_body of CapabilityDelta (D10).
type capabilityBody struct {
	BlockHeight         uint64       `cbor:"0,keyasint"`
	AddedCapabilities   []string     `cbor:"1,keyasint"`
	RemovedCapabilities []string     `cbor:"2,keyasint"`
	AddedEntitlements   []cip11.Hash `cbor:"3,keyasint"`
	RemovedEntitlements []cip11.Hash `cbor:"4,keyasint"`
}

func (f *CapabilityDelta) check() error {
	if err := checkTextList("added_capabilities", f.AddedCapabilities); err != nil {
		return err
	}
	return checkTextList("removed_capabilities", f.RemovedCapabilities)
}

func (f *CapabilityDelta) body() (any, error) {
	return &capabilityBody{f.BlockHeight, f.AddedCapabilities, f.RemovedCapabilities, f.AddedEntitlements, f.RemovedEntitlements}, f.check()
}

func (f *CapabilityDelta) wireValue(dcbor.Codec) (any, error) { return f, f.check() }

func (f *CapabilityDelta) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, nil)
}

// ---- Job frames (§10) ----

type jobAssignmentCBOR struct {
	JobID            cip11.Hash   `cbor:"0,keyasint"`
	JobSpec          Bytes        `cbor:"1,keyasint"`
	JobSpecHash      cip11.Hash   `cbor:"2,keyasint"`
	AssignmentHeight uint64       `cbor:"3,keyasint"`
	AssignmentHash   cip11.Hash   `cbor:"4,keyasint"`
	DeadlineBlock    uint64       `cbor:"5,keyasint"`
	RunnerPubKey     []byte       `cbor:"6,keyasint"`
	ValidatorPubKey  []byte       `cbor:"7,keyasint"`
	ValidatorSigned  ValidatorSig `cbor:"8,keyasint"`
}

func (f *JobAssignment) wireValue(dcbor.Codec) (any, error) {
	if err := f.RunnerPubKey.CheckRole(RoleRunner); err != nil {
		return nil, fieldErr("runner_pubkey", err)
	}
	if err := f.ValidatorPubKey.CheckRole(RoleValidator); err != nil {
		return nil, fieldErr("validator_pubkey", err)
	}
	return &jobAssignmentCBOR{f.JobID, f.JobSpec, f.JobSpecHash, f.AssignmentHeight, f.AssignmentHash, f.DeadlineBlock,
		f.RunnerPubKey.b[:f.RunnerPubKey.n], f.ValidatorPubKey.b[:f.ValidatorPubKey.n], f.ValidatorSigned}, nil
}

func roleKey(name string, b []byte, r Role) (PubKey, error) {
	k, err := ParsePubKey(b)
	if err == nil {
		err = k.CheckRole(r)
	}
	if err != nil {
		return PubKey{}, fieldErr(name, err)
	}
	return k, nil
}

func (f *JobAssignment) decodePayload(c dcbor.Codec, p []byte) error {
	var v jobAssignmentCBOR
	if err := c.Unmarshal(p, &v); err != nil {
		return err
	}
	rk, err := roleKey("runner_pubkey", v.RunnerPubKey, RoleRunner)
	if err != nil {
		return err
	}
	vk, err := roleKey("validator_pubkey", v.ValidatorPubKey, RoleValidator)
	if err != nil {
		return err
	}
	*f = JobAssignment{v.JobID, v.JobSpec, v.JobSpecHash, v.AssignmentHeight, v.AssignmentHash, v.DeadlineBlock, rk, vk, v.ValidatorSigned}
	return nil
}

// jobAckCBOR carries the status as the raw item: a unit variant is an
// unsigned int, Reject(r) is the array [2, r] (D8).
type jobAckCBOR struct {
	JobID          cip11.Hash `cbor:"0,keyasint"`
	AssignmentHash cip11.Hash `cbor:"1,keyasint"`
	Status         dcbor.Raw  `cbor:"2,keyasint"`
	Reason         *string    `cbor:"3,keyasint"`
	Signed         RunnerSig  `cbor:"4,keyasint"`
}

func (f *JobAck) wireValue(c dcbor.Codec) (any, error) {
	if err := checkOptText("reason", f.Reason); err != nil {
		return nil, err
	}
	st, err := f.Status.encode(c)
	if err != nil {
		return nil, fieldErr("status", err)
	}
	return &jobAckCBOR{f.JobID, f.AssignmentHash, st, f.Reason, f.Signed}, nil
}

func (f *JobAck) decodePayload(c dcbor.Codec, p []byte) error {
	var v jobAckCBOR
	if err := c.Unmarshal(p, &v); err != nil {
		return err
	}
	st, err := decodeAckStatus(c, v.Status)
	if err != nil {
		return fieldErr("status", err)
	}
	*f = JobAck{v.JobID, v.AssignmentHash, st, v.Reason, v.Signed}
	return nil
}

// MaxProgressFraction is the §10.4 upper bound of JobProgress.fraction.
const MaxProgressFraction = 100

func (f *JobProgress) check() error {
	if f.Fraction > MaxProgressFraction {
		return fieldErr("fraction", fmt.Errorf("%w: %d > %d", ErrFieldRange, f.Fraction, MaxProgressFraction))
	}
	return checkOptText("detail", f.Detail)
}

func (f *JobProgress) wireValue(dcbor.Codec) (any, error) { return f, f.check() }

func (f *JobProgress) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, (*JobProgress).check)
}

func (f *JobResult) wireValue(dcbor.Codec) (any, error) { return f, nil }

func (f *JobResult) decodePayload(c dcbor.Codec, p []byte) error { return decodeAs(c, p, f, nil) }

func (f *JobResultCommit) wireValue(dcbor.Codec) (any, error) { return f, nil }

func (f *JobResultCommit) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, nil)
}

func (f *JobCancel) check() error {
	if f.Reason > CancelFailed {
		return fieldErr("reason", fmt.Errorf("%w: CancelReason byte %d", ErrEnumUnknown, f.Reason))
	}
	return nil
}

func (f *JobCancel) wireValue(dcbor.Codec) (any, error) { return f, f.check() }

func (f *JobCancel) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, (*JobCancel).check)
}

// ---- Mode-A receipt frames (§8.3, minor 0x0101, SPEC-NOTES N18) ----

func (f *PresenceReceiptRequest) wireValue(dcbor.Codec) (any, error) { return f, nil }

func (f *PresenceReceiptRequest) decodePayload(c dcbor.Codec, p []byte) error {
	return decodeAs(c, p, f, nil)
}

// presenceReceiptCBOR is the 0x15 body: the §8.3 fields in order, keys 0–7.
type presenceReceiptCBOR struct {
	ValidatorPubKey  []byte       `cbor:"0,keyasint"`
	RunnerPubKey     []byte       `cbor:"1,keyasint"`
	SubsetEpoch      uint64       `cbor:"2,keyasint"`
	ValidatorSetHash cip11.Hash   `cbor:"3,keyasint"`
	BlockHeight      uint64       `cbor:"4,keyasint"`
	NonceEcho        uint64       `cbor:"5,keyasint"`
	AcceptingNew     bool         `cbor:"6,keyasint"`
	ValidatorSigned  ValidatorSig `cbor:"7,keyasint"`
}

func (r *PresenceReceipt) wireValue(dcbor.Codec) (any, error) {
	if err := r.ValidatorPubKey.CheckRole(RoleValidator); err != nil {
		return nil, fieldErr("validator_pubkey", err)
	}
	if err := r.RunnerPubKey.CheckRole(RoleRunner); err != nil {
		return nil, fieldErr("runner_pubkey", err)
	}
	return &presenceReceiptCBOR{r.ValidatorPubKey.b[:r.ValidatorPubKey.n], r.RunnerPubKey.b[:r.RunnerPubKey.n],
		r.SubsetEpoch, r.ValidatorSetHash, r.BlockHeight, r.NonceEcho, r.AcceptingNew, r.ValidatorSigned}, nil
}

func (r *PresenceReceipt) decodePayload(c dcbor.Codec, p []byte) error {
	var v presenceReceiptCBOR
	if err := c.Unmarshal(p, &v); err != nil {
		return err
	}
	vk, err := roleKey("validator_pubkey", v.ValidatorPubKey, RoleValidator)
	if err != nil {
		return err
	}
	rk, err := roleKey("runner_pubkey", v.RunnerPubKey, RoleRunner)
	if err != nil {
		return err
	}
	*r = PresenceReceipt{vk, rk, v.SubsetEpoch, v.ValidatorSetHash, v.BlockHeight, v.NonceEcho, v.AcceptingNew, v.ValidatorSigned}
	return nil
}

// ---- Goodbye (§12.5) ----

type goodbyeCBOR struct {
	Reason           GoodbyeReason `cbor:"0,keyasint"`
	Detail           *string       `cbor:"1,keyasint"`
	RetryAfterBlocks *uint64       `cbor:"2,keyasint"`
	Signed           *[]byte       `cbor:"3,keyasint"` // nil: null
}

func checkGoodbyeReason(r GoodbyeReason) error {
	if r > GoodbyeShutdown {
		return fieldErr("reason", fmt.Errorf("%w: GoodbyeReason byte %d", ErrEnumUnknown, r))
	}
	return nil
}

func (f *Goodbye) wireValue(dcbor.Codec) (any, error) {
	if err := checkGoodbyeReason(f.Reason); err != nil {
		return nil, err
	}
	if err := checkOptText("detail", f.Detail); err != nil {
		return nil, err
	}
	v := &goodbyeCBOR{Reason: f.Reason, Detail: f.Detail, RetryAfterBlocks: f.RetryAfterBlocks}
	if f.Signed != nil {
		if f.Signed.n == 0 {
			return nil, fieldErr("signed", fmt.Errorf("%w: empty signature (use nil for absent)", ErrSigLength))
		}
		s := f.Signed.b[:f.Signed.n]
		v.Signed = &s
	}
	return v, nil
}

func (f *Goodbye) decodePayload(c dcbor.Codec, p []byte) error {
	var v goodbyeCBOR
	if err := c.Unmarshal(p, &v); err != nil {
		return err
	}
	if err := checkGoodbyeReason(v.Reason); err != nil {
		return err
	}
	g := Goodbye{Reason: v.Reason, Detail: v.Detail, RetryAfterBlocks: v.RetryAfterBlocks}
	if v.Signed != nil {
		s, err := ParseSig(*v.Signed)
		if err != nil {
			return fieldErr("signed", err)
		}
		g.Signed = &s
	}
	*f = g
	return nil
}
