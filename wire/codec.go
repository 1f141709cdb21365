package wire

import (
	"fmt"
	"unicode/utf8"

	"github.com/cip11/cip11"
)

// Payload encoding and strict decoding of the thirteen §12.2 bodies, per
// DECISIONS D7 (keys = declaration positions, every field present), D8
// (types) and D9 (strictness). Encoders refuse values a decoder would refuse,
// so decode→encode is the identity on every accepted payload.

func fieldErr(name string, err error) error { return fmt.Errorf("%s: %w", name, err) }

func (d *decoder) u64(k int, name string) (uint64, error) {
	if err := d.key(k); err != nil {
		return 0, err
	}
	v, err := d.uint(^uint64(0))
	if err != nil {
		return 0, fieldErr(name, err)
	}
	return v, nil
}

func (d *decoder) hash(k int, name string, dst *cip11.Hash) error {
	if err := d.key(k); err != nil {
		return err
	}
	if err := d.fixed(dst[:]); err != nil {
		return fieldErr(name, err)
	}
	return nil
}

func (d *decoder) pubKey(k int, name string, dst *PubKey) error {
	if err := d.key(k); err != nil {
		return err
	}
	v, err := d.bytes()
	if err == nil {
		*dst, err = ParsePubKey(v)
	}
	if err != nil {
		return fieldErr(name, err)
	}
	return nil
}

func (d *decoder) optTextField(k int, name string) (*string, error) {
	if err := d.key(k); err != nil {
		return nil, err
	}
	s, err := d.optText()
	if err != nil {
		return nil, fieldErr(name, err)
	}
	return s, nil
}

func (d *decoder) boolField(k int, name string) (bool, error) {
	if err := d.key(k); err != nil {
		return false, err
	}
	v, err := d.bool()
	if err != nil {
		return false, fieldErr(name, err)
	}
	return v, nil
}

func (d *decoder) varBytes(k int, name string) (Bytes, error) {
	if err := d.key(k); err != nil {
		return nil, err
	}
	v, err := d.bytes()
	if err != nil {
		return nil, fieldErr(name, err)
	}
	return append(Bytes{}, v...), nil // the caller's buffer may be reused
}

func (d *decoder) role(k int, name string) (Role, error) {
	if err := d.key(k); err != nil {
		return 0, err
	}
	v, err := d.uint(0xff)
	if err == nil {
		var b byte
		if b, err = enumCheck("Role", v, uint64(RoleRunner), uint64(RoleValidator)); err == nil {
			return Role(b), nil
		}
	}
	return 0, fieldErr(name, err)
}

func checkOptText(name string, s *string) error {
	if s != nil && !utf8.ValidString(*s) {
		return fieldErr(name, ErrCBORInvalidUTF8)
	}
	return nil
}

// ---- Hello / HelloAck (§6.2) ----

func appendHelloCommon(b []byte, version uint16, chain uint64, vsh *cip11.Hash, epoch uint64, pk PubKey, role Role, height uint64) ([]byte, error) {
	if !role.Valid() {
		return nil, fieldErr("party_role", fmt.Errorf("%w: Role byte %d", ErrEnumUnknown, role))
	}
	if err := pk.CheckRole(role); err != nil {
		return nil, fieldErr("party_pubkey", err)
	}
	b = appendMapHead(b, 8)
	b = appendUint(appendKey(b, 0), uint64(version))
	b = appendUint(appendKey(b, 1), chain)
	b = appendBytes(appendKey(b, 2), vsh[:])
	b = appendUint(appendKey(b, 3), epoch)
	b = appendBytes(appendKey(b, 4), pk.b[:pk.n])
	b = appendUint(appendKey(b, 5), uint64(role))
	b = appendUint(appendKey(b, 6), height)
	return appendKey(b, 7), nil
}

type helloCommon struct {
	version uint16
	chain   uint64
	vsh     cip11.Hash
	epoch   uint64
	pk      PubKey
	role    Role
	height  uint64
}

func (d *decoder) helloCommon() (h helloCommon, err error) {
	if err = d.mapHead(8); err != nil {
		return h, err
	}
	if err = d.key(0); err != nil {
		return h, err
	}
	v, err := d.uint(0xffff)
	if err != nil {
		return h, fieldErr("version", err)
	}
	h.version = uint16(v)
	if h.chain, err = d.u64(1, "chain_id"); err != nil {
		return h, err
	}
	if err = d.hash(2, "validator_set_hash", &h.vsh); err != nil {
		return h, err
	}
	if h.epoch, err = d.u64(3, "subset_epoch"); err != nil {
		return h, err
	}
	if err = d.pubKey(4, "party_pubkey", &h.pk); err != nil {
		return h, err
	}
	if h.role, err = d.role(5, "party_role"); err != nil {
		return h, err
	}
	if err = h.pk.CheckRole(h.role); err != nil {
		return h, fieldErr("party_pubkey", err)
	}
	if h.height, err = d.u64(6, "block_height"); err != nil {
		return h, err
	}
	return h, d.key(7)
}

func (f *Hello) appendPayload(b []byte) ([]byte, error) {
	b, err := appendHelloCommon(b, f.Version, f.ChainID, &f.ValidatorSetHash, f.SubsetEpoch, f.PartyPubKey, f.PartyRole, f.BlockHeight)
	if err != nil {
		return nil, err
	}
	return appendBytes(b, f.ChallengeNonce[:]), nil
}

func (f *Hello) decodePayload(d *decoder) error {
	h, err := d.helloCommon()
	if err != nil {
		return err
	}
	var nonce cip11.Hash
	if err := d.fixed(nonce[:]); err != nil {
		return fieldErr("challenge_nonce", err)
	}
	*f = Hello{h.version, h.chain, h.vsh, h.epoch, h.pk, h.role, h.height, nonce}
	return nil
}

func (f *HelloAck) appendPayload(b []byte) ([]byte, error) {
	if err := f.SignedChallenge.CheckRole(f.PartyRole); err != nil {
		return nil, fieldErr("signed_challenge", err)
	}
	b, err := appendHelloCommon(b, f.Version, f.ChainID, &f.ValidatorSetHash, f.SubsetEpoch, f.PartyPubKey, f.PartyRole, f.BlockHeight)
	if err != nil {
		return nil, err
	}
	return appendBytes(b, f.SignedChallenge.b[:f.SignedChallenge.n]), nil
}

func (f *HelloAck) decodePayload(d *decoder) error {
	h, err := d.helloCommon()
	if err != nil {
		return err
	}
	v, err := d.bytes()
	var sig Sig
	if err == nil {
		sig, err = ParseSig(v)
	}
	if err == nil {
		err = sig.CheckRole(h.role)
	}
	if err != nil {
		return fieldErr("signed_challenge", err)
	}
	*f = HelloAck{h.version, h.chain, h.vsh, h.epoch, h.pk, h.role, h.height, sig}
	return nil
}

// ---- Heartbeats (§6.3) ----

func (f *HeartbeatPing) appendPayload(b []byte) ([]byte, error) {
	b = appendMapHead(b, 3)
	b = appendUint(appendKey(b, 0), f.BlockHeight)
	b = appendUint(appendKey(b, 1), f.Nonce)
	return appendBytes(appendKey(b, 2), f.Signed[:]), nil
}

func (f *HeartbeatPing) decodePayload(d *decoder) (err error) {
	var v HeartbeatPing
	if err = d.mapHead(3); err != nil {
		return err
	}
	if v.BlockHeight, err = d.u64(0, "block_height"); err != nil {
		return err
	}
	if v.Nonce, err = d.u64(1, "nonce"); err != nil {
		return err
	}
	if err = d.key(2); err != nil {
		return err
	}
	if err = d.fixed(v.Signed[:]); err != nil {
		return fieldErr("signed", err)
	}
	*f = v
	return nil
}

func (f *HeartbeatPong) appendPayload(b []byte) ([]byte, error) {
	b = appendMapHead(b, 4)
	b = appendUint(appendKey(b, 0), f.BlockHeight)
	b = appendUint(appendKey(b, 1), f.NonceEcho)
	b = appendBool(appendKey(b, 2), f.AcceptingNew)
	return appendBytes(appendKey(b, 3), f.ValidatorSigned[:]), nil
}

func (f *HeartbeatPong) decodePayload(d *decoder) (err error) {
	var v HeartbeatPong
	if err = d.mapHead(4); err != nil {
		return err
	}
	if v.BlockHeight, err = d.u64(0, "block_height"); err != nil {
		return err
	}
	if v.NonceEcho, err = d.u64(1, "nonce_echo"); err != nil {
		return err
	}
	if v.AcceptingNew, err = d.boolField(2, "accepting_new"); err != nil {
		return err
	}
	if err = d.key(3); err != nil {
		return err
	}
	if err = d.fixed(v.ValidatorSigned[:]); err != nil {
		return fieldErr("validator_signed", err)
	}
	*f = v
	return nil
}

// ---- Backpressure (§6.4) and CapabilityDelta (§6.5) ----

// appendBody appends the map without the `signed` key when withSigned is
// false: the §12.6 canonical_frame_body (DECISIONS D10).
func (f *BackpressureSignal) appendBody(b []byte, withSigned bool) ([]byte, error) {
	if err := checkOptText("reason", f.Reason); err != nil {
		return nil, err
	}
	n := 5
	if withSigned {
		n = 6
	}
	b = appendMapHead(b, n)
	b = appendUint(appendKey(b, 0), f.BlockHeight)
	b = appendUint(appendKey(b, 1), uint64(f.ActiveJobs))
	b = appendUint(appendKey(b, 2), uint64(f.MaxConcurrent))
	b = appendBool(appendKey(b, 3), f.AcceptingNew)
	b = appendOptText(appendKey(b, 4), f.Reason)
	if withSigned {
		b = appendBytes(appendKey(b, 5), f.Signed[:])
	}
	return b, nil
}

func (f *BackpressureSignal) appendPayload(b []byte) ([]byte, error) { return f.appendBody(b, true) }

func (f *BackpressureSignal) decodePayload(d *decoder) (err error) {
	var v BackpressureSignal
	if err = d.mapHead(6); err != nil {
		return err
	}
	if v.BlockHeight, err = d.u64(0, "block_height"); err != nil {
		return err
	}
	for i, p := range []*uint32{&v.ActiveJobs, &v.MaxConcurrent} {
		if err = d.key(1 + i); err != nil {
			return err
		}
		n, err := d.uint(0xffffffff)
		if err != nil {
			return fieldErr([]string{"active_jobs", "max_concurrent"}[i], err)
		}
		*p = uint32(n)
	}
	if v.AcceptingNew, err = d.boolField(3, "accepting_new"); err != nil {
		return err
	}
	if v.Reason, err = d.optTextField(4, "reason"); err != nil {
		return err
	}
	if err = d.key(5); err != nil {
		return err
	}
	if err = d.fixed(v.Signed[:]); err != nil {
		return fieldErr("signed", err)
	}
	*f = v
	return nil
}

func appendTextList(b []byte, name string, l []string) ([]byte, error) {
	b = appendArrayHead(b, len(l))
	for _, s := range l {
		if !utf8.ValidString(s) {
			return nil, fieldErr(name, ErrCBORInvalidUTF8)
		}
		b = appendText(b, s)
	}
	return b, nil
}

func appendHashList(b []byte, l []cip11.Hash) []byte {
	b = appendArrayHead(b, len(l))
	for i := range l {
		b = appendBytes(b, l[i][:])
	}
	return b
}

func (f *CapabilityDelta) appendBody(b []byte, withSigned bool) ([]byte, error) {
	n := 5
	if withSigned {
		n = 6
	}
	b = appendMapHead(b, n)
	b = appendUint(appendKey(b, 0), f.BlockHeight)
	b, err := appendTextList(appendKey(b, 1), "added_capabilities", f.AddedCapabilities)
	if err != nil {
		return nil, err
	}
	if b, err = appendTextList(appendKey(b, 2), "removed_capabilities", f.RemovedCapabilities); err != nil {
		return nil, err
	}
	b = appendHashList(appendKey(b, 3), f.AddedEntitlements)
	b = appendHashList(appendKey(b, 4), f.RemovedEntitlements)
	if withSigned {
		b = appendBytes(appendKey(b, 5), f.Signed[:])
	}
	return b, nil
}

func (f *CapabilityDelta) appendPayload(b []byte) ([]byte, error) { return f.appendBody(b, true) }

func (d *decoder) textList(k int, name string) ([]string, error) {
	if err := d.key(k); err != nil {
		return nil, err
	}
	n, err := d.arrayHead()
	if err != nil {
		return nil, fieldErr(name, err)
	}
	l := make([]string, n)
	for i := range l {
		if l[i], err = d.text(); err != nil {
			return nil, fieldErr(name, err)
		}
	}
	return l, nil
}

func (d *decoder) hashList(k int, name string) ([]cip11.Hash, error) {
	if err := d.key(k); err != nil {
		return nil, err
	}
	n, err := d.arrayHead()
	if err != nil {
		return nil, fieldErr(name, err)
	}
	l := make([]cip11.Hash, n)
	for i := range l {
		if err = d.fixed(l[i][:]); err != nil {
			return nil, fieldErr(name, err)
		}
	}
	return l, nil
}

func (f *CapabilityDelta) decodePayload(d *decoder) (err error) {
	var v CapabilityDelta
	if err = d.mapHead(6); err != nil {
		return err
	}
	if v.BlockHeight, err = d.u64(0, "block_height"); err != nil {
		return err
	}
	if v.AddedCapabilities, err = d.textList(1, "added_capabilities"); err != nil {
		return err
	}
	if v.RemovedCapabilities, err = d.textList(2, "removed_capabilities"); err != nil {
		return err
	}
	if v.AddedEntitlements, err = d.hashList(3, "added_entitlements"); err != nil {
		return err
	}
	if v.RemovedEntitlements, err = d.hashList(4, "removed_entitlements"); err != nil {
		return err
	}
	if err = d.key(5); err != nil {
		return err
	}
	if err = d.fixed(v.Signed[:]); err != nil {
		return fieldErr("signed", err)
	}
	*f = v
	return nil
}

// ---- Job frames (§10) ----

func (f *JobAssignment) appendPayload(b []byte) ([]byte, error) {
	if err := f.RunnerPubKey.CheckRole(RoleRunner); err != nil {
		return nil, fieldErr("runner_pubkey", err)
	}
	if err := f.ValidatorPubKey.CheckRole(RoleValidator); err != nil {
		return nil, fieldErr("validator_pubkey", err)
	}
	b = appendMapHead(b, 9)
	b = appendBytes(appendKey(b, 0), f.JobID[:])
	b = appendBytes(appendKey(b, 1), f.JobSpec)
	b = appendBytes(appendKey(b, 2), f.JobSpecHash[:])
	b = appendUint(appendKey(b, 3), f.AssignmentHeight)
	b = appendBytes(appendKey(b, 4), f.AssignmentHash[:])
	b = appendUint(appendKey(b, 5), f.DeadlineBlock)
	b = appendBytes(appendKey(b, 6), f.RunnerPubKey.b[:f.RunnerPubKey.n])
	b = appendBytes(appendKey(b, 7), f.ValidatorPubKey.b[:f.ValidatorPubKey.n])
	return appendBytes(appendKey(b, 8), f.ValidatorSigned[:]), nil
}

func (f *JobAssignment) decodePayload(d *decoder) (err error) {
	var v JobAssignment
	if err = d.mapHead(9); err != nil {
		return err
	}
	if err = d.hash(0, "job_id", &v.JobID); err != nil {
		return err
	}
	if v.JobSpec, err = d.varBytes(1, "job_spec"); err != nil {
		return err
	}
	if err = d.hash(2, "job_spec_hash", &v.JobSpecHash); err != nil {
		return err
	}
	if v.AssignmentHeight, err = d.u64(3, "assignment_height"); err != nil {
		return err
	}
	if err = d.hash(4, "assignment_hash", &v.AssignmentHash); err != nil {
		return err
	}
	if v.DeadlineBlock, err = d.u64(5, "deadline_block"); err != nil {
		return err
	}
	if err = d.pubKey(6, "runner_pubkey", &v.RunnerPubKey); err != nil {
		return err
	}
	if err = v.RunnerPubKey.CheckRole(RoleRunner); err != nil {
		return fieldErr("runner_pubkey", err)
	}
	if err = d.pubKey(7, "validator_pubkey", &v.ValidatorPubKey); err != nil {
		return err
	}
	if err = v.ValidatorPubKey.CheckRole(RoleValidator); err != nil {
		return fieldErr("validator_pubkey", err)
	}
	if err = d.key(8); err != nil {
		return err
	}
	if err = d.fixed(v.ValidatorSigned[:]); err != nil {
		return fieldErr("validator_signed", err)
	}
	*f = v
	return nil
}

func (f *JobAck) appendPayload(b []byte) ([]byte, error) {
	if !f.Status.valid() {
		return nil, fieldErr("status", fmt.Errorf("%w: AckStatus %d/%d", ErrEnumUnknown, f.Status.Kind, f.Status.Reason))
	}
	if err := checkOptText("reason", f.Reason); err != nil {
		return nil, err
	}
	b = appendMapHead(b, 5)
	b = appendBytes(appendKey(b, 0), f.JobID[:])
	b = appendBytes(appendKey(b, 1), f.AssignmentHash[:])
	b = f.Status.appendCBOR(appendKey(b, 2))
	b = appendOptText(appendKey(b, 3), f.Reason)
	return appendBytes(appendKey(b, 4), f.Signed[:]), nil
}

func (f *JobAck) decodePayload(d *decoder) (err error) {
	var v JobAck
	if err = d.mapHead(5); err != nil {
		return err
	}
	if err = d.hash(0, "job_id", &v.JobID); err != nil {
		return err
	}
	if err = d.hash(1, "assignment_hash", &v.AssignmentHash); err != nil {
		return err
	}
	if err = d.key(2); err != nil {
		return err
	}
	if v.Status, err = d.ackStatus(); err != nil {
		return fieldErr("status", err)
	}
	if v.Reason, err = d.optTextField(3, "reason"); err != nil {
		return err
	}
	if err = d.key(4); err != nil {
		return err
	}
	if err = d.fixed(v.Signed[:]); err != nil {
		return fieldErr("signed", err)
	}
	*f = v
	return nil
}

// MaxProgressFraction is the §10.4 upper bound of JobProgress.fraction.
const MaxProgressFraction = 100

func (f *JobProgress) appendPayload(b []byte) ([]byte, error) {
	if f.Fraction > MaxProgressFraction {
		return nil, fieldErr("fraction", fmt.Errorf("%w: %d > 100", ErrFieldRange, f.Fraction))
	}
	if err := checkOptText("detail", f.Detail); err != nil {
		return nil, err
	}
	b = appendMapHead(b, 3)
	b = appendBytes(appendKey(b, 0), f.JobID[:])
	b = appendUint(appendKey(b, 1), uint64(f.Fraction))
	return appendOptText(appendKey(b, 2), f.Detail), nil
}

func (f *JobProgress) decodePayload(d *decoder) (err error) {
	var v JobProgress
	if err = d.mapHead(3); err != nil {
		return err
	}
	if err = d.hash(0, "job_id", &v.JobID); err != nil {
		return err
	}
	if err = d.key(1); err != nil {
		return err
	}
	n, err := d.uint(MaxProgressFraction)
	if err != nil {
		return fieldErr("fraction", err)
	}
	v.Fraction = uint8(n)
	if v.Detail, err = d.optTextField(2, "detail"); err != nil {
		return err
	}
	*f = v
	return nil
}

func appendResult(b []byte, id *cip11.Hash, tx []byte) []byte {
	b = appendMapHead(b, 2)
	b = appendBytes(appendKey(b, 0), id[:])
	return appendBytes(appendKey(b, 1), tx)
}

func (d *decoder) result() (id cip11.Hash, tx Bytes, err error) {
	if err = d.mapHead(2); err != nil {
		return id, nil, err
	}
	if err = d.hash(0, "job_id", &id); err != nil {
		return id, nil, err
	}
	tx, err = d.varBytes(1, "tx_bytes")
	return id, tx, err
}

func (f *JobResult) appendPayload(b []byte) ([]byte, error) {
	return appendResult(b, &f.JobID, f.TxBytes), nil
}

func (f *JobResult) decodePayload(d *decoder) error {
	id, tx, err := d.result()
	if err == nil {
		*f = JobResult{id, tx}
	}
	return err
}

func (f *JobResultCommit) appendPayload(b []byte) ([]byte, error) {
	return appendResult(b, &f.JobID, f.TxBytes), nil
}

func (f *JobResultCommit) decodePayload(d *decoder) error {
	id, tx, err := d.result()
	if err == nil {
		*f = JobResultCommit{id, tx}
	}
	return err
}

func (f *JobCancel) appendPayload(b []byte) ([]byte, error) {
	if f.Reason > CancelFailed {
		return nil, fieldErr("reason", fmt.Errorf("%w: CancelReason byte %d", ErrEnumUnknown, f.Reason))
	}
	b = appendMapHead(b, 4)
	b = appendBytes(appendKey(b, 0), f.JobID[:])
	b = appendBytes(appendKey(b, 1), f.AssignmentHash[:])
	b = appendUint(appendKey(b, 2), uint64(f.Reason))
	return appendBytes(appendKey(b, 3), f.ValidatorSigned[:]), nil
}

func (f *JobCancel) decodePayload(d *decoder) (err error) {
	var v JobCancel
	if err = d.mapHead(4); err != nil {
		return err
	}
	if err = d.hash(0, "job_id", &v.JobID); err != nil {
		return err
	}
	if err = d.hash(1, "assignment_hash", &v.AssignmentHash); err != nil {
		return err
	}
	if err = d.key(2); err != nil {
		return err
	}
	n, err := d.uint(0xff)
	if err == nil {
		var r byte
		r, err = enumCheck("CancelReason", n, 0, uint64(CancelFailed))
		v.Reason = CancelReason(r)
	}
	if err != nil {
		return fieldErr("reason", err)
	}
	if err = d.key(3); err != nil {
		return err
	}
	if err = d.fixed(v.ValidatorSigned[:]); err != nil {
		return fieldErr("validator_signed", err)
	}
	*f = v
	return nil
}

// ---- Goodbye (§12.5) ----

func (f *Goodbye) appendPayload(b []byte) ([]byte, error) {
	if f.Reason > GoodbyeShutdown {
		return nil, fieldErr("reason", fmt.Errorf("%w: GoodbyeReason byte %d", ErrEnumUnknown, f.Reason))
	}
	if err := checkOptText("detail", f.Detail); err != nil {
		return nil, err
	}
	if f.Signed != nil && f.Signed.n == 0 {
		return nil, fieldErr("signed", fmt.Errorf("%w: empty signature (use nil for absent)", ErrSigLength))
	}
	b = appendMapHead(b, 4)
	b = appendUint(appendKey(b, 0), uint64(f.Reason))
	b = appendOptText(appendKey(b, 1), f.Detail)
	b = appendKey(b, 2)
	if f.RetryAfterBlocks == nil {
		b = append(b, cborNull)
	} else {
		b = appendUint(b, *f.RetryAfterBlocks)
	}
	b = appendKey(b, 3)
	if f.Signed == nil {
		return append(b, cborNull), nil
	}
	return appendBytes(b, f.Signed.b[:f.Signed.n]), nil
}

func (f *Goodbye) decodePayload(d *decoder) (err error) {
	var v Goodbye
	if err = d.mapHead(4); err != nil {
		return err
	}
	if err = d.key(0); err != nil {
		return err
	}
	n, err := d.uint(0xff)
	if err == nil {
		var r byte
		r, err = enumCheck("GoodbyeReason", n, 0, uint64(GoodbyeShutdown))
		v.Reason = GoodbyeReason(r)
	}
	if err != nil {
		return fieldErr("reason", err)
	}
	if v.Detail, err = d.optTextField(1, "detail"); err != nil {
		return err
	}
	if err = d.key(2); err != nil {
		return err
	}
	if !d.null() {
		r, err := d.uint(^uint64(0))
		if err != nil {
			return fieldErr("retry_after_blocks", err)
		}
		v.RetryAfterBlocks = &r
	}
	if err = d.key(3); err != nil {
		return err
	}
	if !d.null() {
		raw, err := d.bytes()
		var s Sig
		if err == nil {
			s, err = ParseSig(raw)
		}
		if err != nil {
			return fieldErr("signed", err)
		}
		v.Signed = &s
	}
	*f = v
	return nil
}
