package nodetx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/wire"
)

// The devnet transaction: this node's Transaction::read / Transaction::write
// (§3.3, §10.3). CIP-11 does not define the node's transaction encoding; the
// transport only needs a decoder that yields the signer and the result
// instruction (wire.TxDecoder). This one is a fixed binary layout signed by
// the runner's secp256k1 key (D5 signatures, recoverable):
//
//	magic "C11T" (4) ‖ version 0x02 ‖ kind (1) ‖ chain_id (8, BE) ‖
//	signer (20) ‖ nonce (8, BE) ‖ job_id (32) ‖ payload_len (2, BE) ‖
//	payload ‖ signature (65)
//
// The signature is over keccak256(TxDomain ‖ every byte before it). The
// signer field must equal the recovered address. chain_id binds the
// transaction to one chain (admission refuses another chain's, ErrWrongChain);
// a heartbeat's nonce is the chain height it was signed at, admission
// refuses one more than HeartbeatWindow blocks away from the chain's
// (ErrStaleTx), and a block counts it only if the nonce is after the
// runner's on-chain last_heartbeat (HeartbeatCounts), so a heartbeat
// counts once and cannot be replayed to keep a dead runner alive. Payloads: Heartbeat none;
// Register the stake as 16 bytes BE; Commit the 32-byte commitment
// keccak256(result ‖ salt); Reveal result (32) ‖ salt (32) ‖ output (0 to
// MaxOutput bytes, RevealPayload; an output present makes result
// keccak256(output), ErrRevealOutput); Certificate
// height (8, BE) ‖ 1 to MaxCertificateReceipts receipts of ReceiptLen bytes
// each (CertificatePayload).

// TxDomain separates devnet transaction signatures from every §12.6 domain.
const TxDomain = "cip11-devnet-tx/v2"

// TxKind is the devnet instruction.
type TxKind uint8

const (
	// TxHeartbeat is the CIP-2 on-chain runner heartbeat (§7.1): the
	// signer's last_heartbeat becomes the including block's height.
	TxHeartbeat TxKind = iota + 1
	// TxRegister registers the signer as a runner with the payload's stake.
	TxRegister
	// TxCommit is SystemInstruction::JobResultCommit (§10.3).
	TxCommit
	// TxReveal is SystemInstruction::JobResultSubmit (§10.3).
	TxReveal
	// TxCertificate is SubmitPresenceCertificate (§8.3): the signer is the
	// certificate's runner, runner_signed is the transaction signature.
	TxCertificate
	// TxReconfigure is the DEVNET admin reconfiguration (§5.3–§5.4,
	// SPEC-NOTES C11): the payload is a canonical chainlog.Reconfigure
	// (EncodeReconfigure), the signer the genesis's devnet admin, the nonce
	// the new epoch; a chain without a devnet admin refuses it.
	TxReconfigure
)

func (k TxKind) String() string {
	switch k {
	case TxHeartbeat:
		return "heartbeat"
	case TxRegister:
		return "register"
	case TxCommit:
		return "commit"
	case TxReveal:
		return "reveal"
	case TxCertificate:
		return "certificate"
	case TxReconfigure:
		return "reconfigure"
	}
	return fmt.Sprintf("TxKind(%d)", uint8(k))
}

const (
	txMagic      = "C11T"
	txVersion    = 2
	txHeaderLen  = 4 + 1 + 1 + 8 + 20 + 8 + 32 + 2
	maxTxPayload = max(8+MaxCertificateReceipts*ReceiptLen, MaxReconfigurePayload)
	// MaxTxBytes bounds an encoded transaction.
	MaxTxBytes = txHeaderLen + maxTxPayload + wire.RunnerSigLen
)

// MaxReconfigurePayload bounds a TxReconfigure's payload: 64 validators of
// about 420 bytes of canonical JSON each fit.
const MaxReconfigurePayload = 32 << 10

// Sentinel errors of the codec (adapters/node/chain re-exports them).
var (
	// ErrBadRequest: a submission is malformed or invalid.
	ErrBadRequest = errors.New("node: bad request")
	// ErrNilKey: a nil key was given.
	ErrNilKey = errors.New("node: nil key")
)

// ErrTx marks bytes that are not a valid devnet transaction.
var ErrTx = errors.New("node: malformed transaction")

// Tx is a decoded devnet transaction. It implements wire.Transaction.
type Tx struct {
	Kind    TxKind
	ChainID uint64
	From    cip11.Address
	Nonce   uint64
	JobID   cip11.Hash
	Payload []byte
	Sig     wire.RunnerSig
	// PubKey is the signer's key, recovered from Sig.
	PubKey wire.PubKey
	raw    []byte
	cert   *chainlog.Certificate // a decoded TxCertificate's instruction (DecodeTx)
	reconf *chainlog.Reconfigure // a decoded TxReconfigure's (DecodeTx)
}

// Reconfigure is a decoded TxReconfigure's reconfiguration (nil for any
// other transaction).
func (t *Tx) Reconfigure() *chainlog.Reconfigure { return t.reconf }

// Signer implements wire.Transaction.
func (t *Tx) Signer() cip11.Address { return t.From }

// Instruction implements wire.Transaction (§10.3 checks 2 and 3).
func (t *Tx) Instruction() (wire.InstructionKind, cip11.Hash) {
	switch t.Kind {
	case TxCommit:
		return wire.InstructionJobResultCommit, t.JobID
	case TxReveal:
		return wire.InstructionJobResultSubmit, t.JobID
	}
	return wire.InstructionOther, cip11.Hash{}
}

// Bytes is the encoded transaction (as signed).
func (t *Tx) Bytes() []byte { return t.raw }

// Hash is the transaction hash: keccak256 of its encoding.
func (t *Tx) Hash() cip11.Hash { return cip11.Keccak256(t.raw) }

func (t *Tx) body() ([]byte, error) {
	if len(t.Payload) > maxTxPayload || !payloadOK(t.Kind, len(t.Payload)) {
		return nil, fmt.Errorf("%w: %s with a payload of %d bytes", ErrTx, t.Kind, len(t.Payload))
	}
	if t.Kind == TxReveal {
		if err := CheckReveal(t.Payload); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTx, err)
		}
	}
	b := make([]byte, 0, txHeaderLen+len(t.Payload)+wire.RunnerSigLen)
	b = append(b, txMagic...)
	b = append(b, txVersion, byte(t.Kind))
	b = binary.BigEndian.AppendUint64(b, t.ChainID)
	b = append(b, t.From[:]...)
	b = binary.BigEndian.AppendUint64(b, t.Nonce)
	b = append(b, t.JobID[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.Payload)))
	return append(b, t.Payload...), nil
}

func txDigest(body []byte) cip11.Hash { return cip11.Keccak256([]byte(TxDomain), body) }

// SignTx builds and signs a transaction for chain chainID with the runner
// key k. A heartbeat's nonce is the chain height it is signed at.
func SignTx(k *wire.RunnerKey, chainID uint64, kind TxKind, nonce uint64, jobID cip11.Hash, payload []byte) (*Tx, error) {
	if k == nil {
		return nil, ErrNilKey
	}
	t := &Tx{Kind: kind, ChainID: chainID, From: k.Address(), Nonce: nonce, JobID: jobID, Payload: payload}
	if kind == TxReconfigure {
		r, err := chainlog.DecodeReconfigure(payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTx, err)
		}
		t.reconf = r
	}
	body, err := t.body()
	if err != nil {
		return nil, err
	}
	if t.Sig, err = k.Sign(txDigest(body)); err != nil {
		return nil, err
	}
	t.raw = append(body, t.Sig[:]...)
	t.PubKey = k.PubKey()
	return t, nil
}

// TxCodec is the node's Transaction::read (wire.TxDecoder) and its normal
// validation hook (wire.TxValidator, §10.3 check 4) for chain ChainID.
type TxCodec struct{ ChainID uint64 }

// DecodeTransaction implements wire.TxDecoder: strict layout, known kind,
// payload size per kind, and a low-s D5 signature recovering to the
// signer field.
func (TxCodec) DecodeTransaction(b []byte) (wire.Transaction, error) { return DecodeTx(b) }

// ValidateTransaction implements wire.TxValidator: a devnet transaction of
// this chain. Decoding already verified the signature; fees are not
// modelled by the devnet.
func (c TxCodec) ValidateTransaction(tx wire.Transaction) error {
	t, ok := tx.(*Tx)
	if !ok {
		return fmt.Errorf("%w: %T is not a devnet transaction", ErrTx, tx)
	}
	if t.ChainID != c.ChainID {
		return fmt.Errorf("%w: signed for chain %d, this is chain %d", ErrWrongChain, t.ChainID, c.ChainID)
	}
	return nil
}

// ErrWrongChain: a transaction signed for another chain.
var ErrWrongChain = errors.New("node: transaction for another chain")

// ErrStaleTx: a heartbeat signed at a height too far from the chain's.
var ErrStaleTx = errors.New("node: stale transaction")

// HeartbeatWindow bounds how far a heartbeat's signing height (its nonce)
// may be from the chain's height at admission, and how many blocks before
// the block that counts it it may have been signed (HeartbeatCounts).
const HeartbeatWindow = 256

// DecodeTx decodes and verifies a devnet transaction.
func DecodeTx(b []byte) (*Tx, error) {
	if len(b) < txHeaderLen+wire.RunnerSigLen || len(b) > MaxTxBytes {
		return nil, fmt.Errorf("%w: %d bytes", ErrTx, len(b))
	}
	if string(b[:4]) != txMagic || b[4] != txVersion {
		return nil, fmt.Errorf("%w: bad magic or version", ErrTx)
	}
	t := &Tx{Kind: TxKind(b[5]), ChainID: binary.BigEndian.Uint64(b[6:14])}
	copy(t.From[:], b[14:34])
	t.Nonce = binary.BigEndian.Uint64(b[34:42])
	copy(t.JobID[:], b[42:74])
	n := int(binary.BigEndian.Uint16(b[74:76]))
	if len(b) != txHeaderLen+n+wire.RunnerSigLen {
		return nil, fmt.Errorf("%w: payload length %d does not match %d bytes", ErrTx, n, len(b))
	}
	t.Payload = append([]byte(nil), b[txHeaderLen:txHeaderLen+n]...)
	if !payloadOK(t.Kind, n) {
		return nil, fmt.Errorf("%w: kind %d with a %d-byte payload", ErrTx, b[5], n)
	}
	if (t.Kind == TxHeartbeat || t.Kind == TxRegister || t.Kind == TxCertificate || t.Kind == TxReconfigure) && t.JobID != (cip11.Hash{}) {
		return nil, fmt.Errorf("%w: %s carries a job_id", ErrTx, t.Kind)
	}
	if t.Kind == TxReveal {
		if err := CheckReveal(t.Payload); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTx, err)
		}
	}
	if t.Kind == TxCertificate {
		c, err := t.Certificate()
		if err != nil {
			return nil, err
		}
		t.cert = c
	}
	if t.Kind == TxReconfigure {
		r, err := chainlog.DecodeReconfigure(t.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTx, err)
		}
		if uint64(r.Epoch) != t.Nonce {
			return nil, fmt.Errorf("%w: reconfigure of epoch %d with nonce %d", ErrTx, r.Epoch, t.Nonce)
		}
		t.reconf = r
	}
	copy(t.Sig[:], b[txHeaderLen+n:])
	pub, err := wire.RecoverRunner(txDigest(b[:txHeaderLen+n]), t.Sig)
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrTx, err)
	}
	addr, err := pub.RunnerAddress()
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrTx, err)
	}
	t.PubKey = pub
	if addr != t.From {
		return nil, fmt.Errorf("%w: signed by %s, claims %s", ErrTx, addr, t.From)
	}
	t.raw = append([]byte(nil), b...)
	return t, nil
}

// Commitment is the CIP-2 commit of a result: keccak256(result ‖ salt).
func Commitment(result, salt cip11.Hash) cip11.Hash { return cip11.Keccak256(result[:], salt[:]) }

// MaxOutput bounds the output a TxReveal carries (SPEC-NOTES C12).
const MaxOutput = 4096

// ErrRevealOutput: a TxReveal whose output is longer than MaxOutput, or
// whose result is not keccak256 of the output it carries. Decoding wraps it
// with ErrTx, so admission refuses such a reveal and a block carrying one is
// invalid.
var ErrRevealOutput = errors.New("node: reveal output")

// RevealPayload is a TxReveal payload: result (32) ‖ salt (32) ‖ output.
// With an output (non-empty) result must be keccak256(output); a nil or
// empty output gives the 64-byte reveal whose result is opaque.
func RevealPayload(result, salt cip11.Hash, output []byte) []byte {
	b := make([]byte, 0, 64+len(output))
	b = append(b, result[:]...)
	b = append(b, salt[:]...)
	return append(b, output...)
}

// SplitReveal splits a TxReveal payload into result, salt and output (nil
// for a 64-byte reveal) and checks the output rule (CheckReveal); ok is
// false for anything else.
func SplitReveal(p []byte) (result, salt cip11.Hash, output []byte, ok bool) {
	if CheckReveal(p) != nil {
		return result, salt, nil, false
	}
	copy(result[:], p[:32])
	copy(salt[:], p[32:64])
	if len(p) > 64 {
		output = p[64:]
	}
	return result, salt, output, true
}

// CheckReveal is the TxReveal payload rule: at least 64 bytes; beyond 64
// the output, at most MaxOutput bytes, and then the result (the first 32
// bytes) must be keccak256(output). Errors wrap ErrRevealOutput (and ErrTx
// for a payload shorter than 64 bytes).
func CheckReveal(p []byte) error {
	switch {
	case len(p) < 64:
		return fmt.Errorf("%w: reveal with a %d-byte payload", ErrTx, len(p))
	case len(p) == 64:
		return nil
	case len(p)-64 > MaxOutput:
		return fmt.Errorf("%w: output of %d bytes (max %d)", ErrRevealOutput, len(p)-64, MaxOutput)
	}
	if h := cip11.Keccak256(p[64:]); !bytes.Equal(h[:], p[:32]) {
		return fmt.Errorf("%w: result %x is not keccak256 of the %d-byte output", ErrRevealOutput, p[:32], len(p)-64)
	}
	return nil
}

func payloadOK(k TxKind, n int) bool {
	switch k {
	case TxHeartbeat:
		return n == 0
	case TxRegister:
		return n == 16
	case TxCommit:
		return n == 32
	case TxReveal:
		return n >= 64 // the output bound is CheckReveal's (ErrRevealOutput)
	case TxCertificate:
		return n > 8 && (n-8)%ReceiptLen == 0 && (n-8)/ReceiptLen <= MaxCertificateReceipts
	case TxReconfigure:
		return n > 0 && n <= MaxReconfigurePayload
	}
	return false
}
