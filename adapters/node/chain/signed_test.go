package chain_test

import (
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/wire"
)

// TestCoreCheckSigned (SPEC-NOTES C7): a network verifier accepts a block's
// registrations and heartbeats only with their runners' signed
// transactions among the block's submissions. The proposer's Signed lists
// exactly what its block needs; without one, with another stake, with a
// stale heartbeat, with a registry update no transaction makes, or with a
// genesis runner's stake changed, the block is ErrUnsigned.
func TestCoreCheckSigned(t *testing.T) {
	w := newWorld(t, 3, 0)
	one := w.propose()
	if err := w.c.CheckSigned(one, nil); err != nil {
		t.Fatalf("block 1 with the genesis registrations: %v", err)
	}
	lifted := *one
	lifted.Registry = append([]chainlog.RegistryOp(nil), one.Registry...)
	more := cip11.U128From64(1 << 50)
	lifted.Registry[0].Stake = &more
	if err := w.c.CheckSigned(&lifted, nil); !errors.Is(err, chain.ErrUnsigned) {
		t.Fatalf("a genesis runner with another stake: %v, want ErrUnsigned", err)
	}
	w.block()
	w.block()
	newKey, err := wire.NewRunnerKey([32]byte{0x77})
	if err != nil {
		t.Fatal(err)
	}
	var sb [16]byte
	cip11.U128From64(123_000).PutBE16(sb[:])
	reg, err := chain.SignTx(newKey, uint64(w.d.Genesis.ChainID), chain.TxRegister, 0, cip11.Hash{}, sb[:])
	if err != nil {
		t.Fatal(err)
	}
	hb, err := chain.SignTx(w.d.RunnerKeys[1], uint64(w.d.Genesis.ChainID), chain.TxHeartbeat, 3, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*chain.Tx{reg, hb} {
		if _, err := w.c.SubmitTx(tx.Bytes(), w.now); err != nil {
			t.Fatal(err)
		}
	}
	b := w.propose() // height 4: the registration and runner 1's heartbeat
	if len(b.Registry) != 1 || len(b.Heartbeats) != 1 {
		t.Fatalf("block 4: registry %v heartbeats %v", b.Registry, b.Heartbeats)
	}
	signed := w.c.Signed(b)
	if len(signed) != 2 || string(signed[0]) != string(reg.Bytes()) || string(signed[1]) != string(hb.Bytes()) {
		t.Fatalf("Signed lists %d transactions, want the registration then the heartbeat", len(signed))
	}
	decoded := func(raws ...[]byte) []*chain.Tx {
		var out []*chain.Tx
		for _, r := range raws {
			tx, err := chain.DecodeTx(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, tx)
		}
		return out
	}
	if err := w.c.CheckSigned(b, decoded(signed...)); err != nil {
		t.Fatalf("the proposer's block with its signed transactions: %v", err)
	}
	stale, err := chain.SignTx(w.d.RunnerKeys[1], uint64(w.d.Genesis.ChainID), chain.TxHeartbeat, 4+chain.HeartbeatWindow+1, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cip11.U128From64(999).PutBE16(sb[:])
	otherStake, err := chain.SignTx(newKey, uint64(w.d.Genesis.ChainID), chain.TxRegister, 1, cip11.Hash{}, sb[:])
	if err != nil {
		t.Fatal(err)
	}
	update := *b
	h := chainlog.Healthy
	update.Registry = []chainlog.RegistryOp{{Op: chainlog.OpUpdate, Address: w.d.Genesis.Runners[0].Address, Health: &h}}
	update.Heartbeats = nil
	for name, c := range map[string]struct {
		b   *chainlog.Block
		txs []*chain.Tx
	}{
		"no register transaction":     {b, decoded(hb.Bytes())},
		"no heartbeat transaction":    {b, decoded(reg.Bytes())},
		"register with another stake": {b, decoded(otherStake.Bytes(), hb.Bytes())},
		"stale heartbeat":             {b, decoded(reg.Bytes(), stale.Bytes())},
		"registry update":             {&update, nil},
	} {
		if err := w.c.CheckSigned(c.b, c.txs); !errors.Is(err, chain.ErrUnsigned) {
			t.Errorf("%s: %v, want ErrUnsigned", name, err)
		}
	}
}
