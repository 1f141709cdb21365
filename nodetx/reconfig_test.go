package nodetx

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
)

// TestReconfigureTx (SPEC-NOTES C11): a TxReconfigure carries a canonical
// chainlog.Reconfigure and its nonce is the new epoch; it decodes back to
// the same reconfiguration, and a non-canonical payload, a nonce other
// than the epoch or a job_id are refused.
func TestReconfigureTx(t *testing.T) {
	k := testRunnerKey(t, 5)
	r := &chainlog.Reconfigure{Epoch: 2, Activation: 90, GroupKey: chainlog.PublicKey{1},
		Set: []chainlog.SetMember{{PeerPubKey: chainlog.PeerKey{1}, QUIC: "h:1"}, {PeerPubKey: chainlog.PeerKey{2}, QUIC: "h:2"}}}
	p, err := chainlog.EncodeReconfigure(r)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := SignTx(k, 7011, TxReconfigure, 2, cip11.Hash{}, p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeTx(tx.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Reconfigure(); back.Kind != TxReconfigure || got == nil || got.Activation != 90 || len(got.Set) != 2 || back.From != k.Address() {
		t.Fatalf("decoded %+v", back)
	}
	if tx.Reconfigure() == nil || back.Kind.String() != "reconfigure" {
		t.Fatal("SignTx keeps no reconfiguration")
	}
	spaced := bytes.Replace(p, []byte(`,"activation_height"`), []byte(`, "activation_height"`), 1)
	if _, err := SignTx(k, 7011, TxReconfigure, 2, cip11.Hash{}, spaced); !errors.Is(err, ErrTx) {
		t.Errorf("non-canonical payload signed: %v", err)
	}
	for name, mut := range map[string]func(*Tx){
		"spaced payload": func(t2 *Tx) { t2.Payload = spaced },
		"nonce":          func(t2 *Tx) { t2.Nonce = 3 },
		"job_id":         func(t2 *Tx) { t2.JobID = cip11.Hash{1} },
	} {
		t2 := &Tx{Kind: TxReconfigure, ChainID: 7011, From: k.Address(), Nonce: 2, Payload: bytes.Clone(p)}
		mut(t2)
		body, err := t2.body()
		if err != nil {
			t.Fatal(err)
		}
		sig, err := k.Sign(txDigest(body))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeTx(append(body, sig[:]...)); !errors.Is(err, ErrTx) {
			t.Errorf("%s: %v, want ErrTx", name, err)
		}
	}
}
