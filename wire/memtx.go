package wire

import (
	"fmt"

	"github.com/cip11/cip11"
)

// MemTx is an in-memory reference [Transaction] for tests and vectors. Its
// encoding (the only one [MemTxCodec] reads) is
// `signer (20) ‖ kind (1) ‖ job_id (32) ‖ valid (1: 0x01 passes validation)`.
// It stands in for the node's codec; it is not the node's Transaction. See §10.3.
type MemTx struct {
	From  cip11.Address
	Kind  InstructionKind
	JobID cip11.Hash
	Valid bool
}

// MemTxLen is the size of an encoded MemTx.
const MemTxLen = 20 + 1 + 32 + 1

// Signer implements [Transaction]. See §10.3.
func (t *MemTx) Signer() cip11.Address { return t.From }

// Instruction implements [Transaction]. See §10.3.
func (t *MemTx) Instruction() (InstructionKind, cip11.Hash) { return t.Kind, t.JobID }

// Bytes encodes t. See §10.3.
func (t *MemTx) Bytes() []byte {
	b := append(append(make([]byte, 0, MemTxLen), t.From[:]...), byte(t.Kind))
	b = append(b, t.JobID[:]...)
	if t.Valid {
		return append(b, 1)
	}
	return append(b, 0)
}

// MemTxCodec decodes MemTx encodings and validates them by their valid
// byte; it implements both [TxDecoder] and [TxValidator]. See §10.3.
type MemTxCodec struct{}

// DecodeTransaction implements [TxDecoder]. See §10.3.
func (MemTxCodec) DecodeTransaction(b []byte) (Transaction, error) {
	if len(b) != MemTxLen || b[20] > byte(InstructionJobResultSubmit) || b[53] > 1 {
		return nil, fmt.Errorf("memtx: malformed %d-byte transaction", len(b))
	}
	t := &MemTx{From: cip11.Address(b[:20]), Kind: InstructionKind(b[20]), JobID: cip11.Hash(b[21:53]), Valid: b[53] == 1}
	return t, nil
}

// ValidateTransaction implements [TxValidator]. See §10.3.
func (MemTxCodec) ValidateTransaction(tx Transaction) error {
	if t, ok := tx.(*MemTx); !ok || !t.Valid {
		return fmt.Errorf("memtx: transaction fails validation")
	}
	return nil
}
