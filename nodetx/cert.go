package nodetx

import (
	"encoding/binary"
	"fmt"

	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/wire"
)

// The TxCertificate payload (§8.3 SubmitPresenceCertificate): height (8,
// BE) ‖ receipts, each a fixed ReceiptLen-byte record
//
//	validator_pubkey (33, scheme-tagged Ed25519) ‖ runner_pubkey (34,
//	scheme-tagged secp256k1) ‖ subset_epoch (8, BE) ‖ validator_set_hash
//	(32) ‖ block_height (8, BE) ‖ nonce_echo (8, BE) ‖ accepting_new (1:
//	0 or 1) ‖ validator_signed (64)
//
// — the §8.4 estimate's 188 bytes per receipt. The layout checks only the
// structure: key bytes that are no valid key leave the receipt uncounted
// at execution (§8.3 evaluation order, step 2), they do not make the
// transaction malformed.
const (
	// ReceiptLen is one receipt's encoded length.
	ReceiptLen = wire.ValidatorPubKeyLen + wire.RunnerPubKeyLen + 8 + 32 + 8 + 8 + 1 + wire.ValidatorSigLen
	// MaxCertificateReceipts bounds the receipts of one certificate
	// transaction (MAX_SUBSET of the devnet's largest network, and then
	// some: a runner never holds more than k receipts worth submitting).
	MaxCertificateReceipts = 32
)

// CertificatePayload encodes a TxCertificate payload: the certificate
// height and the receipts, 1 to MaxCertificateReceipts of them.
func CertificatePayload(height uint64, rs []wire.PresenceReceipt) ([]byte, error) {
	if len(rs) == 0 || len(rs) > MaxCertificateReceipts {
		return nil, fmt.Errorf("%w: %d receipts (1 to %d)", ErrTx, len(rs), MaxCertificateReceipts)
	}
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(rs)*ReceiptLen), height)
	for i := range rs {
		r := &rs[i]
		v, k := r.ValidatorPubKey.Bytes(), r.RunnerPubKey.Bytes()
		if len(v) != wire.ValidatorPubKeyLen || len(k) != wire.RunnerPubKeyLen {
			return nil, fmt.Errorf("%w: receipt %d: key lengths %d and %d", ErrTx, i, len(v), len(k))
		}
		b = append(append(b, v...), k...)
		b = binary.BigEndian.AppendUint64(b, r.SubsetEpoch)
		b = append(b, r.ValidatorSetHash[:]...)
		b = binary.BigEndian.AppendUint64(b, r.BlockHeight)
		b = binary.BigEndian.AppendUint64(b, r.NonceEcho)
		acc := byte(0)
		if r.AcceptingNew {
			acc = 1
		}
		b = append(append(b, acc), r.ValidatorSigned[:]...)
	}
	return b, nil
}

// Certificate decodes a TxCertificate into the chain-log instruction
// (§8.3): the runner is the transaction's signer. A transaction DecodeTx
// returned carries it already decoded; the result is shared, not copied.
func (t *Tx) Certificate() (*chainlog.Certificate, error) {
	if t.cert != nil {
		return t.cert, nil
	}
	p := t.Payload
	if t.Kind != TxCertificate || !payloadOK(TxCertificate, len(p)) {
		return nil, fmt.Errorf("%w: %s with a %d-byte payload is no certificate", ErrTx, t.Kind, len(p))
	}
	c := &chainlog.Certificate{Runner: t.From, Height: chainlog.U64(binary.BigEndian.Uint64(p))}
	for off := 8; off < len(p); off += ReceiptLen {
		r := p[off : off+ReceiptLen]
		var rc chainlog.Receipt
		i := 0
		take := func(n int) []byte { i += n; return r[i-n : i] }
		rc.ValidatorPubKey = chainlog.Bytes(append([]byte(nil), take(wire.ValidatorPubKeyLen)...))
		rc.RunnerPubKey = chainlog.Bytes(append([]byte(nil), take(wire.RunnerPubKeyLen)...))
		rc.SubsetEpoch = chainlog.U64(binary.BigEndian.Uint64(take(8)))
		copy(rc.ValidatorSetHash[:], take(32))
		rc.BlockHeight = chainlog.U64(binary.BigEndian.Uint64(take(8)))
		rc.NonceEcho = chainlog.U64(binary.BigEndian.Uint64(take(8)))
		switch acc := take(1)[0]; acc {
		case 0, 1:
			rc.AcceptingNew = acc == 1
		default:
			return nil, fmt.Errorf("%w: receipt %d: accepting_new byte 0x%02x", ErrTx, (off-8)/ReceiptLen, acc)
		}
		rc.ValidatorSigned = chainlog.Bytes(append([]byte(nil), take(wire.ValidatorSigLen)...))
		c.Receipts = append(c.Receipts, rc)
	}
	return c, nil
}
