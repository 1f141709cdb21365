package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/internal/dcbor"
)

// §12.6 signature domains (ASCII, no length prefix: DECISIONS D2).
const (
	DomainConnection      = "cowboy-cip11-connection-v1"
	DomainHelloAck        = "cowboy-cip11-hello-ack-v1"
	DomainHeartbeatPing   = "cowboy-cip11-heartbeat-ping-v1"
	DomainHeartbeatPong   = "cowboy-cip11-heartbeat-pong-v1"
	DomainPresenceReceipt = "cowboy-cip11-presence-receipt-v1"
	DomainControl         = "cowboy-cip11-control-v1"
	DomainJobAssignment   = "cowboy-cip11-job-assignment-v1"
	DomainJobAck          = "cowboy-cip11-job-ack-v1"
	DomainJobCancel       = "cowboy-cip11-job-cancel-v1"
	DomainGoodbye         = "cowboy-cip11-goodbye-v1"
)

// preimage accumulates a §12.6 preimage in a caller-provided buffer so that
// hot paths (heartbeats) build it without allocating.
type preimage []byte

// signed starts `domain ‖ signer_role ‖ scheme_id` (DECISIONS D6).
func signed(buf []byte, domain string, signer Role) preimage {
	return preimage(append(append(buf[:0], domain...), byte(signer), byte(signer.Scheme())))
}

func (p preimage) u64(v uint64) preimage       { return binary.BigEndian.AppendUint64(p, v) }
func (p preimage) u16(v uint16) preimage       { return binary.BigEndian.AppendUint16(p, v) }
func (p preimage) u8(v byte) preimage          { return append(p, v) }
func (p preimage) key(k PubKey) preimage       { return append(p, k.b[:k.n]...) }
func (p preimage) hash(h *cip11.Hash) preimage { return append(p, h[:]...) }
func (p preimage) bool(v bool) preimage {
	if v {
		return append(p, 1)
	}
	return append(p, 0)
}
func (p preimage) sum() cip11.Hash { return cip11.Keccak256(p) }

// Conn is the authenticated identity of one QUIC connection (§6.2): the
// values both HelloAcks bound and that §12.6 "Preimage field origins" says
// every connection-scoped preimage takes from the connection, not the frame.
type Conn struct {
	ChainID          uint64     `json:"chain_id,string"`
	Version          uint16     `json:"version"`
	RunnerPubKey     PubKey     `json:"runner_pubkey"`
	ValidatorPubKey  PubKey     `json:"validator_pubkey"`
	ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
	SubsetEpoch      uint64     `json:"subset_epoch,string"`
	ChannelBinding   cip11.Hash `json:"channel_binding"` // TLS-Exporter("cowboy-cip11-handshake-v1", "", 32)
}

// Session is a Conn with its connection_id computed once. See §6.2, §12.6.
type Session struct {
	Conn
	ID cip11.Hash // connection_id (§12.6)
}

// NewSession validates the connection's key roles and computes connection_id. See §6.2, §12.6.
func NewSession(c Conn) (*Session, error) {
	id, err := ConnectionID(&c)
	if err != nil {
		return nil, err
	}
	return &Session{Conn: c, ID: id}, nil
}

// ConnectionID is §12.6 `connection_id = keccak256("cowboy-cip11-connection-v1"
// ‖ chain_id ‖ version ‖ runner_pubkey ‖ validator_pubkey ‖ validator_set_hash
// ‖ subset_epoch ‖ channel_binding)`. It is not a signature, so it carries no
// role/scheme prefix (D6).
func ConnectionID(c *Conn) (cip11.Hash, error) {
	if err := c.RunnerPubKey.CheckRole(RoleRunner); err != nil {
		return cip11.Hash{}, fmt.Errorf("runner_pubkey: %w", err)
	}
	if err := c.ValidatorPubKey.CheckRole(RoleValidator); err != nil {
		return cip11.Hash{}, fmt.Errorf("validator_pubkey: %w", err)
	}
	var buf [192]byte
	p := preimage(append(buf[:0], DomainConnection...))
	p = p.u64(c.ChainID).u16(c.Version).key(c.RunnerPubKey).key(c.ValidatorPubKey)
	return p.hash(&c.ValidatorSetHash).u64(c.SubsetEpoch).hash(&c.ChannelBinding).sum(), nil
}

// keyOf returns the connection identity of role r.
func (s *Session) keyOf(r Role) PubKey {
	if r == RoleRunner {
		return s.RunnerPubKey
	}
	return s.ValidatorPubKey
}

// ---- HelloAck (§6.2, §12.6) ----

// Digest is the §12.6 HelloAck digest the sender signs: `chain_id ‖ version
// ‖ sender_role ‖ sender_pubkey ‖ recipient_role ‖ recipient_pubkey ‖
// validator_set_hash ‖ subset_epoch ‖ peer_challenge_nonce ‖ channel_binding`,
// with the ack's own values, the recipient's from its Hello (block_height
// is advisory and not signed, §6.2). `version` is the connection's: the
// lower of the ack's and the recipient Hello's (D28 "used in connection_id
// and every preimage"; SPEC-NOTES W9), so both ends hash the same value
// when their minors differ.
func (a *HelloAck) Digest(peer *Hello, channelBinding cip11.Hash) (cip11.Hash, error) {
	if err := a.PartyPubKey.CheckRole(a.PartyRole); err != nil {
		return cip11.Hash{}, fmt.Errorf("sender: %w", err)
	}
	if err := peer.PartyPubKey.CheckRole(peer.PartyRole); err != nil {
		return cip11.Hash{}, fmt.Errorf("recipient: %w", err)
	}
	var buf [256]byte
	p := signed(buf[:], DomainHelloAck, a.PartyRole).u64(a.ChainID).u16(NegotiatedVersion(a.Version, peer.Version))
	p = p.u8(byte(a.PartyRole)).key(a.PartyPubKey).u8(byte(peer.PartyRole)).key(peer.PartyPubKey)
	p = p.hash(&a.ValidatorSetHash).u64(a.SubsetEpoch).hash(&peer.ChallengeNonce).hash(&channelBinding)
	return p.sum(), nil
}

// Sign fills SignedChallenge; PartyRole and PartyPubKey must already be k's. See §6.2.
func (a *HelloAck) Sign(peer *Hello, channelBinding cip11.Hash, k Signer) error {
	if k.Role() != a.PartyRole || k.PubKey() != a.PartyPubKey {
		return fmt.Errorf("%w: signer is not the ack's party", ErrPubKeyRole)
	}
	d, err := a.Digest(peer, channelBinding)
	if err != nil {
		return err
	}
	a.SignedChallenge, err = k.SignDigest(d)
	return err
}

// Verify checks SignedChallenge under PartyPubKey for PartyRole (§6.2).
func (a *HelloAck) Verify(peer *Hello, channelBinding cip11.Hash) error {
	d, err := a.Digest(peer, channelBinding)
	if err != nil {
		return err
	}
	return VerifySig(a.PartyRole, a.PartyPubKey, d, a.SignedChallenge)
}

// ---- Heartbeats (§6.3) ----

// Digest is the §12.6 HeartbeatPing digest: `connection_id ‖ runner_pubkey ‖
// validator_pubkey ‖ block_height ‖ nonce`, runner-signed.
func (f *HeartbeatPing) Digest(s *Session) cip11.Hash {
	var buf [160]byte
	p := signed(buf[:], DomainHeartbeatPing, RoleRunner).hash(&s.ID).key(s.RunnerPubKey).key(s.ValidatorPubKey)
	return p.u64(f.BlockHeight).u64(f.Nonce).sum()
}

// Sign fills Signed with the runner's signature. See §6.3, §12.6.
func (f *HeartbeatPing) Sign(s *Session, k *RunnerKey) (err error) {
	f.Signed, err = k.Sign(f.Digest(s))
	return err
}

// Verify checks Signed against the connection's runner key. See §6.3, §12.6.
func (f *HeartbeatPing) Verify(s *Session) error {
	return VerifyRunner(f.Digest(s), f.Signed, s.RunnerPubKey)
}

// Digest is the §12.6 HeartbeatPong digest: `connection_id ‖
// validator_pubkey ‖ runner_pubkey ‖ block_height ‖ nonce_echo ‖
// accepting_new`, validator-signed.
func (f *HeartbeatPong) Digest(s *Session) cip11.Hash {
	var buf [160]byte
	p := signed(buf[:], DomainHeartbeatPong, RoleValidator).hash(&s.ID).key(s.ValidatorPubKey).key(s.RunnerPubKey)
	return p.u64(f.BlockHeight).u64(f.NonceEcho).bool(f.AcceptingNew).sum()
}

// Sign fills ValidatorSigned. See §6.3, §12.6.
func (f *HeartbeatPong) Sign(s *Session, k *ValidatorKey) { f.ValidatorSigned = k.Sign(f.Digest(s)) }

// Verify checks ValidatorSigned against the connection's validator key. See §6.3, §12.6.
func (f *HeartbeatPong) Verify(s *Session) error {
	return VerifyValidator(f.Digest(s), f.ValidatorSigned, s.ValidatorPubKey)
}

// ---- PresenceReceipt (§8.3, §12.6) ----

// PresenceReceipt is the §8.3 Mode-A chain-verifiable receipt. Its digest
// has no channel binding; chain_id is the executing network's, supplied by
// the caller, never a connection value.
type PresenceReceipt struct {
	ValidatorPubKey  PubKey       `json:"validator_pubkey"`
	RunnerPubKey     PubKey       `json:"runner_pubkey"`
	SubsetEpoch      uint64       `json:"subset_epoch,string"`
	ValidatorSetHash cip11.Hash   `json:"validator_set_hash"`
	BlockHeight      uint64       `json:"block_height,string"`
	NonceEcho        uint64       `json:"nonce_echo,string"`
	AcceptingNew     bool         `json:"accepting_new"`
	ValidatorSigned  ValidatorSig `json:"validator_signed"`
}

// Digest is the §12.6 PresenceReceipt digest: `chain_id ‖ validator_pubkey ‖
// runner_pubkey ‖ subset_epoch ‖ validator_set_hash ‖ block_height ‖
// nonce_echo ‖ accepting_new`, validator-signed.
func (r *PresenceReceipt) Digest(chainID uint64) (cip11.Hash, error) {
	if err := r.ValidatorPubKey.CheckRole(RoleValidator); err != nil {
		return cip11.Hash{}, fmt.Errorf("validator_pubkey: %w", err)
	}
	if err := r.RunnerPubKey.CheckRole(RoleRunner); err != nil {
		return cip11.Hash{}, fmt.Errorf("runner_pubkey: %w", err)
	}
	var buf [192]byte
	p := signed(buf[:], DomainPresenceReceipt, RoleValidator).u64(chainID).key(r.ValidatorPubKey).key(r.RunnerPubKey)
	p = p.u64(r.SubsetEpoch).hash(&r.ValidatorSetHash).u64(r.BlockHeight).u64(r.NonceEcho).bool(r.AcceptingNew)
	return p.sum(), nil
}

// Sign fills ValidatorSigned; ValidatorPubKey must be k's. See §8.3.
func (r *PresenceReceipt) Sign(chainID uint64, k *ValidatorKey) error {
	if r.ValidatorPubKey != k.PubKey() {
		return fmt.Errorf("%w: signer is not validator_pubkey", ErrPubKeyRole)
	}
	d, err := r.Digest(chainID)
	r.ValidatorSigned = k.Sign(d)
	return err
}

// Verify checks ValidatorSigned under ValidatorPubKey for chainID. See §8.3.
func (r *PresenceReceipt) Verify(chainID uint64) error {
	d, err := r.Digest(chainID)
	if err != nil {
		return err
	}
	return VerifyValidator(d, r.ValidatorSigned, r.ValidatorPubKey)
}

// ---- control-v1: BackpressureSignal (§6.4), CapabilityDelta (§6.5) ----

func controlDigest(s *Session, t FrameType, blockHeight uint64, body []byte) cip11.Hash {
	bodyHash := cip11.Keccak256(body)
	var buf [192]byte
	p := signed(buf[:], DomainControl, RoleRunner).hash(&s.ID).key(s.RunnerPubKey).key(s.ValidatorPubKey)
	return p.u8(byte(t)).u64(blockHeight).hash(&bodyHash).sum()
}

// CanonicalBody returns the §12.6 canonical_frame_body: the payload map
// without its `signed` key, other keys unchanged (DECISIONS D10).
func (f *BackpressureSignal) CanonicalBody() ([]byte, error) { return canonicalBody(f.body()) }

func canonicalBody(v any, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return dcbor.New().Marshal(v)
}

// Digest is the §12.6 control-v1 digest: `connection_id ‖ runner_pubkey ‖
// validator_pubkey ‖ 0x12 ‖ block_height ‖ keccak256(canonical_frame_body)`.
func (f *BackpressureSignal) Digest(s *Session) (cip11.Hash, error) {
	body, err := f.CanonicalBody()
	if err != nil {
		return cip11.Hash{}, err
	}
	return controlDigest(s, TypeBackpressureSignal, f.BlockHeight, body), nil
}

// Sign fills Signed. See §6.4, §12.6.
func (f *BackpressureSignal) Sign(s *Session, k *RunnerKey) error {
	d, err := f.Digest(s)
	if err == nil {
		f.Signed, err = k.Sign(d)
	}
	return err
}

// Verify checks Signed against the connection's runner key. See §6.4, §12.6.
func (f *BackpressureSignal) Verify(s *Session) error {
	d, err := f.Digest(s)
	if err != nil {
		return err
	}
	return VerifyRunner(d, f.Signed, s.RunnerPubKey)
}

// CanonicalBody returns the §12.6 canonical_frame_body (D10).
func (f *CapabilityDelta) CanonicalBody() ([]byte, error) { return canonicalBody(f.body()) }

// Digest is the §12.6 control-v1 digest with frame_type 0x13.
func (f *CapabilityDelta) Digest(s *Session) (cip11.Hash, error) {
	body, err := f.CanonicalBody()
	if err != nil {
		return cip11.Hash{}, err
	}
	return controlDigest(s, TypeCapabilityDelta, f.BlockHeight, body), nil
}

// Sign fills Signed. See §6.5, §12.6.
func (f *CapabilityDelta) Sign(s *Session, k *RunnerKey) error {
	d, err := f.Digest(s)
	if err == nil {
		f.Signed, err = k.Sign(d)
	}
	return err
}

// Verify checks Signed against the connection's runner key. See §6.5, §12.6.
func (f *CapabilityDelta) Verify(s *Session) error {
	d, err := f.Digest(s)
	if err != nil {
		return err
	}
	return VerifyRunner(d, f.Signed, s.RunnerPubKey)
}

// ---- JobAssignment (§10.1) ----

// Digest is assignment_hash (§10.1, §12.6, D6): `chain_id ‖ job_id ‖
// job_spec_hash ‖ assignment_height ‖ deadline_block ‖ runner_pubkey ‖
// validator_pubkey`, validator-signed. chainID is the connection's
// authenticated chain_id; the frame carries none.
func (f *JobAssignment) Digest(chainID uint64) (cip11.Hash, error) {
	if err := f.RunnerPubKey.CheckRole(RoleRunner); err != nil {
		return cip11.Hash{}, fmt.Errorf("runner_pubkey: %w", err)
	}
	if err := f.ValidatorPubKey.CheckRole(RoleValidator); err != nil {
		return cip11.Hash{}, fmt.Errorf("validator_pubkey: %w", err)
	}
	var buf [224]byte
	p := signed(buf[:], DomainJobAssignment, RoleValidator).u64(chainID).hash(&f.JobID).hash(&f.JobSpecHash)
	p = p.u64(f.AssignmentHeight).u64(f.DeadlineBlock).key(f.RunnerPubKey).key(f.ValidatorPubKey)
	return p.sum(), nil
}

// Sign sets ValidatorPubKey to k's key, then AssignmentHash and ValidatorSigned. See §10.1.
func (f *JobAssignment) Sign(chainID uint64, k *ValidatorKey) error {
	f.ValidatorPubKey = k.PubKey()
	d, err := f.Digest(chainID)
	if err != nil {
		return err
	}
	f.AssignmentHash = d
	f.ValidatorSigned = k.Sign(d)
	return nil
}

// Verify recomputes assignment_hash and checks ValidatorSigned under
// ValidatorPubKey (§10.1). Snapshot membership is [CheckAssignment]'s job.
func (f *JobAssignment) Verify(chainID uint64) error {
	d, err := f.Digest(chainID)
	if err != nil {
		return err
	}
	if d != f.AssignmentHash {
		return fmt.Errorf("%w: carried %s, recomputed %s", ErrAssignmentHashMismatch, f.AssignmentHash, d)
	}
	return VerifyValidator(d, f.ValidatorSigned, f.ValidatorPubKey)
}

// ---- JobAck (§10.2) ----

// CanonicalTextOrEmpty is §12.6 canonical_reason_or_empty / detail_or_empty:
// the deterministic-CBOR text encoding of the string, None collapsing to ""
// (so None and "" both encode as 0x60).
func CanonicalTextOrEmpty(s *string) []byte {
	var text string
	if s != nil {
		text = *s
	}
	b, err := dcbor.New().Marshal(text)
	if err != nil { // a Go string always encodes
		return nil
	}
	return b
}

// Digest is the §12.6 JobAck digest: `connection_id ‖ job_id ‖
// assignment_hash ‖ runner_pubkey ‖ validator_pubkey ‖ ack_status_byte ‖
// reject_reason_byte ‖ keccak256(canonical_reason_or_empty)`, runner-signed.
func (f *JobAck) Digest(s *Session) cip11.Hash {
	st, rr := f.Status.PreimageBytes()
	reason := cip11.Keccak256(CanonicalTextOrEmpty(f.Reason))
	var buf [224]byte
	p := signed(buf[:], DomainJobAck, RoleRunner).hash(&s.ID).hash(&f.JobID).hash(&f.AssignmentHash)
	return p.key(s.RunnerPubKey).key(s.ValidatorPubKey).u8(st).u8(rr).hash(&reason).sum()
}

// Sign fills Signed. See §10.2, §12.6.
func (f *JobAck) Sign(s *Session, k *RunnerKey) (err error) {
	f.Signed, err = k.Sign(f.Digest(s))
	return err
}

// Verify checks Signed against the connection's runner key. See §10.2, §12.6.
func (f *JobAck) Verify(s *Session) error {
	return VerifyRunner(f.Digest(s), f.Signed, s.RunnerPubKey)
}

// ---- JobCancel (§10.5) ----

// Digest is the §12.6 JobCancel digest: `connection_id ‖ job_id ‖
// assignment_hash ‖ validator_pubkey ‖ runner_pubkey ‖ cancel_reason_byte`,
// validator-signed.
func (f *JobCancel) Digest(s *Session) cip11.Hash {
	var buf [224]byte
	p := signed(buf[:], DomainJobCancel, RoleValidator).hash(&s.ID).hash(&f.JobID).hash(&f.AssignmentHash)
	return p.key(s.ValidatorPubKey).key(s.RunnerPubKey).u8(byte(f.Reason)).sum()
}

// Sign fills ValidatorSigned. See §10.5, §12.6.
func (f *JobCancel) Sign(s *Session, k *ValidatorKey) { f.ValidatorSigned = k.Sign(f.Digest(s)) }

// Verify checks ValidatorSigned against the connection's validator key. See §10.5, §12.6.
func (f *JobCancel) Verify(s *Session) error {
	return VerifyValidator(f.Digest(s), f.ValidatorSigned, s.ValidatorPubKey)
}

// ---- Goodbye (§12.5) ----

// Digest is the §12.6 Goodbye digest for a Goodbye sent by role sender:
// `connection_id ‖ sender_pubkey ‖ recipient_pubkey ‖ goodbye_reason_byte ‖
// retry_after_blocks_or_zero ‖ keccak256(detail_or_empty)`. None collapses to
// 0 and "" as §12.6 writes.
func (f *Goodbye) Digest(s *Session, sender Role) (cip11.Hash, error) {
	if !sender.Valid() {
		return cip11.Hash{}, fmt.Errorf("%w: Role byte %d", ErrEnumUnknown, sender)
	}
	var retry uint64
	if f.RetryAfterBlocks != nil {
		retry = *f.RetryAfterBlocks
	}
	detail := cip11.Keccak256(CanonicalTextOrEmpty(f.Detail))
	var buf [192]byte
	p := signed(buf[:], DomainGoodbye, sender).hash(&s.ID).key(s.keyOf(sender)).key(s.keyOf(sender.Peer()))
	return p.u8(byte(f.Reason)).u64(retry).hash(&detail).sum(), nil
}

// Sign fills Signed with k's signature; k must be the session's key for its role. See §12.5, §12.6.
func (f *Goodbye) Sign(s *Session, k Signer) error {
	if k.PubKey() != s.keyOf(k.Role()) {
		return fmt.Errorf("%w: signer is not this connection's %s", ErrPubKeyRole, k.Role())
	}
	d, err := f.Digest(s, k.Role())
	if err != nil {
		return err
	}
	sig, err := k.SignDigest(d)
	if err == nil {
		f.Signed = &sig
	}
	return err
}

// Verify checks Signed for a Goodbye sent by role sender; an absent
// signature is ErrGoodbyeUnsigned (§12.5: required after mutual auth).
func (f *Goodbye) Verify(s *Session, sender Role) error {
	if f.Signed == nil {
		return ErrGoodbyeUnsigned
	}
	d, err := f.Digest(s, sender)
	if err != nil {
		return err
	}
	return VerifySig(sender, s.keyOf(sender), d, *f.Signed)
}
