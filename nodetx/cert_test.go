package nodetx

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

// TestCertificateTx: a TxCertificate carries the §8.3 certificate height
// and receipts in the fixed 188-byte layout (the §8.4 estimate's size),
// decodes back to the same chain-log certificate with the signer as its
// runner, and refuses no receipts, too many, a ragged payload, a job_id and
// an accepting_new byte other than 0 or 1.
func TestCertificateTx(t *testing.T) {
	if ReceiptLen != 188 {
		t.Fatalf("ReceiptLen %d, want 188 (§8.4)", ReceiptLen)
	}
	k := testRunnerKey(t, 3)
	v := wire.NewValidatorKey([32]byte{9})
	rs := []wire.PresenceReceipt{
		{ValidatorPubKey: v.PubKey(), RunnerPubKey: k.PubKey(), SubsetEpoch: 1, ValidatorSetHash: cip11.Hash{0xaa}, BlockHeight: 40, NonceEcho: 5, AcceptingNew: true},
		{ValidatorPubKey: v.PubKey(), RunnerPubKey: k.PubKey(), SubsetEpoch: 2, ValidatorSetHash: cip11.Hash{0xbb}, BlockHeight: 41, NonceEcho: 6},
	}
	for i := range rs {
		if err := rs[i].Sign(7011, v); err != nil {
			t.Fatal(err)
		}
	}
	p, err := CertificatePayload(42, rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 8+2*188 || p[7] != 42 || p[8] != byte(wire.SchemeEd25519) || p[8+33] != byte(wire.SchemeSecp256k1) {
		t.Fatalf("payload layout: %d bytes, % x…", len(p), p[:10])
	}
	tx, err := SignTx(k, 7011, TxCertificate, 9, cip11.Hash{}, p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeTx(tx.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	c, err := back.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	if c.Runner != k.Address() || c.Height != 42 || len(c.Receipts) != 2 {
		t.Fatalf("certificate %+v", c)
	}
	for i, r := range c.Receipts {
		w := rs[i]
		if !bytes.Equal(r.ValidatorPubKey, w.ValidatorPubKey.Bytes()) || !bytes.Equal(r.RunnerPubKey, w.RunnerPubKey.Bytes()) ||
			uint64(r.SubsetEpoch) != w.SubsetEpoch || r.ValidatorSetHash != w.ValidatorSetHash || uint64(r.BlockHeight) != w.BlockHeight ||
			uint64(r.NonceEcho) != w.NonceEcho || r.AcceptingNew != w.AcceptingNew || !bytes.Equal(r.ValidatorSigned, w.ValidatorSigned[:]) {
			t.Fatalf("receipt %d: %+v, want %+v", i, r, w)
		}
	}
	if _, err := CertificatePayload(1, nil); !errors.Is(err, ErrTx) {
		t.Errorf("no receipts: %v", err)
	}
	if _, err := CertificatePayload(1, make([]wire.PresenceReceipt, MaxCertificateReceipts+1)); !errors.Is(err, ErrTx) {
		t.Errorf("too many receipts: %v", err)
	}
	bad := map[string]func() (*Tx, error){
		"ragged":      func() (*Tx, error) { return SignTx(k, 7011, TxCertificate, 9, cip11.Hash{}, p[:len(p)-1]) },
		"height only": func() (*Tx, error) { return SignTx(k, 7011, TxCertificate, 9, cip11.Hash{}, p[:8]) },
	}
	for name, f := range bad {
		if _, err := f(); !errors.Is(err, ErrTx) {
			t.Errorf("%s: %v, want ErrTx", name, err)
		}
	}
	// Decoding refuses what signing would have: sign a valid shape, then
	// re-sign the bytes with a job_id or a bad accepting_new byte.
	resign := func(mut func(*Tx)) []byte {
		t2 := &Tx{Kind: TxCertificate, ChainID: 7011, From: k.Address(), Nonce: 9, Payload: bytes.Clone(p)}
		mut(t2)
		body := append([]byte(nil), txMagic...)
		body = append(body, txVersion, byte(t2.Kind))
		body = append(body, tx.Bytes()[6:14]...)
		body = append(body, t2.From[:]...)
		body = append(body, tx.Bytes()[34:42]...)
		body = append(body, t2.JobID[:]...)
		body = append(body, byte(len(t2.Payload)>>8), byte(len(t2.Payload)))
		body = append(body, t2.Payload...)
		sig, err := k.Sign(txDigest(body))
		if err != nil {
			t.Fatal(err)
		}
		return append(body, sig[:]...)
	}
	for name, raw := range map[string][]byte{
		"job_id":             resign(func(t2 *Tx) { t2.JobID = cip11.Hash{1} }),
		"accepting_new 0x02": resign(func(t2 *Tx) { t2.Payload[8+33+34+8+32+8+8] = 2 }),
	} {
		if _, err := DecodeTx(raw); !errors.Is(err, ErrTx) {
			t.Errorf("%s: %v, want ErrTx", name, err)
		}
	}
	if raw := resign(func(*Tx) {}); !bytes.Equal(raw, tx.Bytes()) {
		t.Fatal("the re-signing helper does not reproduce SignTx's bytes")
	}
}
