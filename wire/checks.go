package wire

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
)

// ---- Handshake (§6.2, §12.3) ----

// EpochPair is an admissible (subset_epoch, validator_set_hash) offer (§5.3).
type EpochPair struct {
	SubsetEpoch      uint64     `json:"subset_epoch,string"`
	ValidatorSetHash cip11.Hash `json:"validator_set_hash"`
}

// Local is one party's view for admitting a peer (§6.2).
type Local struct {
	Role              Role
	ChainID           uint64
	Version           uint16
	AcceptHigherMinor bool // §12.3 policy for a peer with a higher minor
	// Epochs are the admissible snapshot pairs: one outside a
	// reconfiguration overlap, E and E+1 during OVERLAP_BLOCKS (§5.3).
	Epochs []EpochPair
	// Admits reports whether peer is admissible under the selected pair: for
	// a runner, the validator key is in that snapshot; for a validator, it
	// is in Sub_epoch(runner) and the runner is registered (§6.2). Nil admits.
	Admits func(pair EpochPair, peer PubKey) bool
}

// CheckHello applies every §6.2/§12.3 admission rule decidable from a Hello
// and local state, returning the one snapshot pair the offer selects.
func CheckHello(l *Local, h *Hello) (EpochPair, error) {
	return l.check(h.Version, h.ChainID, h.PartyRole, h.PartyPubKey, EpochPair{h.SubsetEpoch, h.ValidatorSetHash})
}

func (l *Local) check(version uint16, chain uint64, role Role, pk PubKey, offer EpochPair) (EpochPair, error) {
	if err := CheckVersion(l.Version, version, l.AcceptHigherMinor); err != nil {
		return offer, err
	}
	if chain != l.ChainID {
		return offer, fmt.Errorf("%w: peer %d, ours %d", ErrWrongChain, chain, l.ChainID)
	}
	if role != l.Role.Peer() {
		return offer, fmt.Errorf("%w: %s talking to %s", ErrHelloRole, role, l.Role)
	}
	if err := pk.CheckRole(role); err != nil {
		return offer, err
	}
	n := 0
	for _, p := range l.Epochs {
		if p == offer {
			n++
		}
	}
	if n != 1 {
		return offer, fmt.Errorf("%w: epoch %d", ErrValidatorSetMismatch, offer.SubsetEpoch)
	}
	if l.Admits != nil && !l.Admits(offer, pk) {
		if l.Role == RoleRunner {
			return offer, ErrValidatorNotInSnapshot
		}
		return offer, ErrNotInSubset
	}
	return offer, nil
}

// CheckHelloAck admits the peer's HelloAck answering our Hello: the peer's
// Hello rules again, the same party and epoch pair as the peer's Hello, and
// the signature over our challenge and the channel binding (§6.2, §12.6).
func CheckHelloAck(l *Local, ours, peers *Hello, ack *HelloAck, channelBinding cip11.Hash) error {
	pair, err := l.check(ack.Version, ack.ChainID, ack.PartyRole, ack.PartyPubKey, EpochPair{ack.SubsetEpoch, ack.ValidatorSetHash})
	if err != nil {
		return err
	}
	if ack.PartyPubKey != peers.PartyPubKey || ack.PartyRole != peers.PartyRole || ack.Version != peers.Version {
		return ErrHelloAckParty
	}
	if pair != (EpochPair{peers.SubsetEpoch, peers.ValidatorSetHash}) {
		return fmt.Errorf("%w: HelloAck pair differs from the peer's Hello", ErrValidatorSetMismatch)
	}
	return ack.Verify(ours, channelBinding)
}

// SessionFor returns the session both parties derive once both HelloAcks
// verified: keys by role, the Hellos' chain and epoch pair, and the
// negotiated version. See §6.2.
func SessionFor(ours, peers *Hello, channelBinding cip11.Hash) (*Session, error) {
	c := Conn{
		ChainID: ours.ChainID, Version: NegotiatedVersion(ours.Version, peers.Version),
		ValidatorSetHash: ours.ValidatorSetHash, SubsetEpoch: ours.SubsetEpoch, ChannelBinding: channelBinding,
	}
	for _, h := range []*Hello{ours, peers} {
		if h.PartyRole == RoleRunner {
			c.RunnerPubKey = h.PartyPubKey
		} else {
			c.ValidatorPubKey = h.PartyPubKey
		}
	}
	return NewSession(c)
}

// GoodbyeReasonFor maps a rejection to the §12.5 reason to close with.
func GoodbyeReasonFor(err error) GoodbyeReason {
	switch {
	case errors.Is(err, ErrUnsupportedVersion):
		return GoodbyeUnsupportedVersion
	case errors.Is(err, ErrWrongChain):
		return GoodbyeWrongChain
	case errors.Is(err, ErrNotInSubset), errors.Is(err, ErrValidatorSetMismatch):
		return GoodbyeNotInSubset
	case errors.Is(err, ErrSigInvalid), errors.Is(err, ErrSigHighS), errors.Is(err, ErrSigRecoveryID),
		errors.Is(err, ErrSigLength), errors.Is(err, ErrSigSignerMismatch), errors.Is(err, ErrPubKeyRole),
		errors.Is(err, ErrPubKeyPoint), errors.Is(err, ErrHelloRole), errors.Is(err, ErrHelloAckParty),
		errors.Is(err, ErrValidatorNotInSnapshot):
		return GoodbyeAuthFailed
	}
	return GoodbyeProtocolError
}

// ---- Heartbeats (§6.3) ----

// CheckPingNonce enforces the strictly increasing per-connection nonce;
// first is true for the connection's first Ping (any nonce, normally 0). See §6.3.
func CheckPingNonce(last uint64, first bool, nonce uint64) error {
	if !first && nonce <= last {
		return fmt.Errorf("%w: %d after %d", ErrPingNonceNotIncreasing, nonce, last)
	}
	return nil
}

// CheckPong verifies a Pong against the outstanding Ping's nonce and the
// connection's validator key (§6.3).
func CheckPong(s *Session, outstanding uint64, p *HeartbeatPong) error {
	if p.NonceEcho != outstanding {
		return fmt.Errorf("%w: echo %d, outstanding %d", ErrPongNonceMismatch, p.NonceEcho, outstanding)
	}
	return p.Verify(s)
}

// ---- Mode-A receipts (§8.3, SPEC-NOTES N18) ----

// CheckReceipt is the runner's check of a PresenceReceipt received on
// session s, before it keeps the receipt for a §8.3 certificate:
// validator_pubkey is the connection's authenticated validator
// (ErrValidatorNotPeer), runner_pubkey the connection's runner, this
// runner's own key (ErrRunnerKeyNotOwn), (subset_epoch,
// validator_set_hash) the connection's epoch pair
// (ErrValidatorSetMismatch), and validator_signed verifies over the
// §12.6 PresenceReceipt preimage with the connection's chain_id, which
// the handshake established to be the executing network's (§6.2).
// accepting_new and freshness are the chain's to judge (§8.3).
func CheckReceipt(s *Session, r *PresenceReceipt) error {
	switch {
	case r.ValidatorPubKey != s.ValidatorPubKey:
		return fmt.Errorf("%w: receipt from %s on a connection to %s", ErrValidatorNotPeer, r.ValidatorPubKey, s.ValidatorPubKey)
	case r.RunnerPubKey != s.RunnerPubKey:
		return fmt.Errorf("%w: receipt for %s", ErrRunnerKeyNotOwn, r.RunnerPubKey)
	case r.SubsetEpoch != s.SubsetEpoch || r.ValidatorSetHash != s.ValidatorSetHash:
		return fmt.Errorf("%w: receipt under epoch %d, connection under epoch %d", ErrValidatorSetMismatch, r.SubsetEpoch, s.SubsetEpoch)
	}
	return r.Verify(s.ChainID)
}

// ---- Goodbye (§12.5) ----

// CheckGoodbye classifies a received Goodbye. Before mutual auth (s == nil)
// it is advisory whatever it carries; after, the signature is required and
// must verify for the sender's role, and the Goodbye counts (advisory false). See §12.5, §12.6.
func CheckGoodbye(s *Session, sender Role, g *Goodbye) (advisory bool, err error) {
	if s == nil {
		return true, nil
	}
	return false, g.Verify(s, sender)
}

// ---- Job delivery (§10) ----

// JobSpecVersion is cowboy-protocol-codec's JOB_SPEC_VERSION byte (§12.6).
const JobSpecVersion byte = 1

// JobSpecHash is §12.6 `keccak256("cowboy/jobspec-hash/v1" ‖
// [JOB_SPEC_VERSION] ‖ P)` over the job_spec bytes exactly as carried (D16).
func JobSpecHash(p []byte) cip11.Hash {
	return cip11.Keccak256([]byte("cowboy/jobspec-hash/v1"), []byte{JobSpecVersion}, p)
}

// JobSpecDecoder decodes P with the node's pinned cowboy-protocol-codec
// (D16). The runner only needs to know whether P decodes; a non-nil error
// means it does not. Implementations must not retain p. See §10.1, §12.6.
type JobSpecDecoder interface {
	DecodeJobSpec(p []byte) error
}

// JobSpecDecoderFunc adapts a function to [JobSpecDecoder]. See §10.1, §12.6.
type JobSpecDecoderFunc func(p []byte) error

// DecodeJobSpec implements [JobSpecDecoder]. See §10.1, §12.6.
func (f JobSpecDecoderFunc) DecodeJobSpec(p []byte) error { return f(p) }

// AssignmentContext is the runner's view for checking a JobAssignment (§10.1).
type AssignmentContext struct {
	Session *Session // the connection: chain_id, own runner key, pushing validator
	// InSnapshot reports whether raw is a peer_pubkey of the active snapshot.
	InSnapshot func(raw [32]byte) bool
	// Finalized is the highest height finalized and applied in the runner's view.
	Finalized uint64
	Specs     JobSpecDecoder
	// Accepted is the assignment already accepted for this job_id, or nil.
	Accepted *JobAssignment
}

// CheckAssignment applies the §10.1 runner-side checks and returns the ack
// to send: Accepted for a first valid push, Duplicate for a valid push of
// an accepted job whose non-validator fields are byte-identical, and
// Reject(UnverifiableAssignment) with the reason otherwise (see [AckFor]).
func CheckAssignment(c *AssignmentContext, a *JobAssignment) (AckStatus, error) {
	err := checkAssignment(c, a)
	if err != nil {
		return AckFor(err), err
	}
	if c.Accepted != nil && c.Accepted.JobID == a.JobID {
		if err := sameAssignment(c.Accepted, a); err != nil {
			return AckFor(err), err
		}
		return Duplicate(), nil
	}
	if a.AssignmentHeight > c.Finalized {
		err := fmt.Errorf("%w: height %d, finalized %d", ErrAssignmentNotFinal, a.AssignmentHeight, c.Finalized)
		return AckFor(err), err
	}
	return Accepted(), nil
}

func checkAssignment(c *AssignmentContext, a *JobAssignment) error {
	if h := JobSpecHash(a.JobSpec); h != a.JobSpecHash {
		return fmt.Errorf("%w: carried %s, computed %s", ErrJobSpecHashMismatch, a.JobSpecHash, h)
	}
	if c.Specs != nil {
		if err := c.Specs.DecodeJobSpec(a.JobSpec); err != nil {
			return fmt.Errorf("%w: %v", ErrJobSpecDecode, err)
		}
	}
	if a.RunnerPubKey != c.Session.RunnerPubKey {
		return ErrRunnerKeyNotOwn
	}
	if a.ValidatorPubKey != c.Session.ValidatorPubKey {
		return ErrValidatorNotPeer
	}
	if c.InSnapshot != nil && !c.InSnapshot([32]byte(a.ValidatorPubKey.b[1:ValidatorPubKeyLen])) {
		return ErrValidatorNotInSnapshot
	}
	return a.Verify(c.Session.ChainID)
}

// sameAssignment compares the §10.1 byte-identical fields. assignment_hash
// is excluded: its preimage includes validator_pubkey, so it legitimately
// differs between validators (see conformance/SPEC-NOTES.md); each push's
// own hash was already recomputed and verified.
func sameAssignment(x, y *JobAssignment) error {
	if x.JobID != y.JobID || !bytes.Equal(x.JobSpec, y.JobSpec) || x.JobSpecHash != y.JobSpecHash ||
		x.AssignmentHeight != y.AssignmentHeight || x.DeadlineBlock != y.DeadlineBlock || x.RunnerPubKey != y.RunnerPubKey {
		return ErrAssignmentConflict
	}
	return nil
}

// AckFor returns the JobAck status for a CheckAssignment error: every
// §10.1 failure is Reject(UnverifiableAssignment) (§10.1, §12.6).
func AckFor(err error) AckStatus {
	if err == nil {
		return Accepted()
	}
	return Reject(RejectUnverifiableAssignment)
}

// CheckAck applies §10.2 on the validator: the ack must echo the
// assignment_hash this validator sent for job_id on this connection
// (sent reports it) and carry the connection runner's signature.
func CheckAck(s *Session, a *JobAck, sent func(jobID cip11.Hash) (cip11.Hash, bool)) error {
	if h, ok := sent(a.JobID); !ok || h != a.AssignmentHash {
		return ErrAckUnknownAssignment
	}
	return a.Verify(s)
}

// CheckCancel applies §10.5 on the runner: the cancel must name the
// in-flight assignment for job_id on this connection and carry the
// connection validator's signature.
func CheckCancel(s *Session, c *JobCancel, inFlight func(jobID cip11.Hash) (cip11.Hash, bool)) error {
	if h, ok := inFlight(c.JobID); !ok || h != c.AssignmentHash {
		return ErrCancelUnknownAssignment
	}
	return c.Verify(s)
}

// InstructionKind names the SystemInstruction a result transaction carries. See §10.3.
type InstructionKind byte

// Instruction kinds relevant to §10.3; anything else is InstructionOther.
const (
	InstructionOther InstructionKind = iota
	InstructionJobResultCommit
	InstructionJobResultSubmit
)

// Transaction is the decoded node transaction inside tx_bytes (§10.3).
type Transaction interface {
	// Signer is the address that signed Transaction::payload_bytes.
	Signer() cip11.Address
	// Instruction returns the instruction kind and, for the two result
	// instructions, its job_id.
	Instruction() (InstructionKind, cip11.Hash)
}

// TxDecoder is the node's Transaction::read (§10.3). It must reject
// anything /submit admission would not decode.
type TxDecoder interface {
	DecodeTransaction(b []byte) (Transaction, error)
}

// TxValidator is the node's normal size/signature/nonce/limit/fee
// validation hook (§10.3 check 4).
type TxValidator interface {
	ValidateTransaction(tx Transaction) error
}

// CheckResult applies the §10.3 validator-side checks to a JobResultCommit
// or JobResult from the connection's runner (address runner) and returns
// the decoded transaction to forward verbatim.
func CheckResult(f Frame, runner cip11.Address, dec TxDecoder, val TxValidator) (Transaction, error) {
	var jobID cip11.Hash
	var tx []byte
	var want InstructionKind
	switch r := f.(type) {
	case *JobResultCommit:
		jobID, tx, want = r.JobID, r.TxBytes, InstructionJobResultCommit
	case *JobResult:
		jobID, tx, want = r.JobID, r.TxBytes, InstructionJobResultSubmit
	default:
		return nil, fmt.Errorf("%w: %s is not a result frame", ErrFrameUnknownType, f.Type())
	}
	t, err := dec.DecodeTransaction(tx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrResultTxDecode, err)
	}
	if t.Signer() != runner {
		return nil, fmt.Errorf("%w: signed by %s", ErrResultSigner, t.Signer())
	}
	kind, id := t.Instruction()
	if kind != want {
		return nil, fmt.Errorf("%w: instruction %d in a %s frame", ErrResultInstruction, kind, f.Type())
	}
	if id != jobID {
		return nil, fmt.Errorf("%w: %s", ErrResultJobID, id)
	}
	if val != nil {
		if err := val.ValidateTransaction(t); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrResultTxInvalid, err)
		}
	}
	return t, nil
}
