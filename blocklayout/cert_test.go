package blocklayout

import (
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/nodetx"
	"github.com/cip11/cip11/wire"
)

// TestCertificateNeedsSignedTx: a body SubmitPresenceCertificate (§8.3)
// decodes only with the runner-signed transaction carrying exactly it among
// the block's submissions (runner_signed MUST recover runner): without it,
// with another runner's, or with one whose receipt differs, the block is
// ErrCertificateUnsigned; a block that also lacks a submit's spec is
// ErrSpecMissing (the spec rule is checked first).
func TestCertificateNeedsSignedTx(t *testing.T) {
	k, err := wire.NewRunnerKey([32]byte{8})
	if err != nil {
		t.Fatal(err)
	}
	other, err := wire.NewRunnerKey([32]byte{9})
	if err != nil {
		t.Fatal(err)
	}
	v := wire.NewValidatorKey([32]byte{3})
	rc := wire.PresenceReceipt{ValidatorPubKey: v.PubKey(), RunnerPubKey: k.PubKey(), SubsetEpoch: 0, ValidatorSetHash: cip11.Hash{1},
		BlockHeight: 4, NonceEcho: 2, AcceptingNew: true}
	if err := rc.Sign(7011, v); err != nil {
		t.Fatal(err)
	}
	sign := func(k *wire.RunnerKey, r wire.PresenceReceipt) *nodetx.Tx {
		p, err := nodetx.CertificatePayload(4, []wire.PresenceReceipt{r})
		if err != nil {
			t.Fatal(err)
		}
		tx, err := nodetx.SignTx(k, 7011, nodetx.TxCertificate, 4, cip11.Hash{}, p)
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	good := sign(k, rc)
	cert, err := good.Certificate()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := sampleProposal(t)
	b.Txs = append(b.Txs, chainlog.Tx{Certificate: cert})
	spec := &nodetx.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 2, TimeoutBlocks: 12, Nonce: 7}
	nonce := rc
	nonce.NonceEcho++
	for name, c := range map[string]struct {
		noSpec  bool
		carried [][]byte
		want    error
	}{
		"signed":           {false, [][]byte{good.Bytes()}, nil},
		"missing":          {false, nil, ErrCertificateUnsigned},
		"another runner's": {false, [][]byte{sign(other, rc).Bytes()}, ErrCertificateUnsigned},
		"another receipt":  {false, [][]byte{sign(k, nonce).Bytes()}, ErrCertificateUnsigned},
		// docs/vectors.md cometbft_layout: step 6 (specs) before step 7
		// (certificates), the first failure is the error.
		"spec and signed certificate both missing": {true, nil, ErrSpecMissing},
	} {
		carried := c.carried
		if !c.noSpec {
			carried = append([][]byte{spec.Encode()}, carried...)
		}
		txs, err := EncodeProposal(b, carried, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeProposal(txs, 5, 7011); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}
