package chain_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blockexec"
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
	decoded := func(raws ...[]byte) []*chain.Tx { return decodeTxs(t, raws...) }
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

// TestCoreReconfigureAdmission (SPEC-NOTES C11): a TxReconfigure is
// refused on a chain without a devnet admin, from any other signer, and
// where the executor's schedule cannot take it (a fixed-schedule chain has
// no D30 height schedule); a network verifier accepts a block's
// reconfiguration only beside the admin's signed transaction carrying
// exactly it.
func TestCoreReconfigureAdmission(t *testing.T) {
	admin, err := wire.NewRunnerKey([32]byte{0xad})
	if err != nil {
		t.Fatal(err)
	}
	a := admin.Address()
	r := &chainlog.Reconfigure{Epoch: 1, Activation: 40, GroupKey: chainlog.PublicKey{1},
		Set: []chainlog.SetMember{{PeerPubKey: chainlog.PeerKey{1}, QUIC: "h:1"}, {PeerPubKey: chainlog.PeerKey{2}, QUIC: "h:2"}}}
	payload, err := chainlog.EncodeReconfigure(r)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k *wire.RunnerKey, chainID uint64, p []byte) *chain.Tx {
		tx, err := chain.SignTx(k, chainID, chain.TxReconfigure, 1, cip11.Hash{}, p)
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	plain := newWorld(t, 2, 0)
	id := uint64(plain.d.Genesis.ChainID)
	if _, err := plain.c.SubmitTx(sign(admin, id, payload).Bytes(), plain.now); !errors.Is(err, chain.ErrBadRequest) || !strings.Contains(err.Error(), "no devnet admin") {
		t.Errorf("no devnet admin: %v", err)
	}
	w := newWorldWith(t, 2, func(c *chain.Config) { c.Admin = &a })
	if _, err := w.c.SubmitTx(sign(w.d.RunnerKeys[0], id, payload).Bytes(), w.now); !errors.Is(err, chain.ErrBadRequest) || !strings.Contains(err.Error(), "not the devnet admin") {
		t.Errorf("a runner's reconfiguration: %v", err)
	}
	if _, err := w.c.SubmitTx(sign(admin, id, payload).Bytes(), w.now); !errors.Is(err, blockexec.ErrReconfigure) {
		t.Errorf("on a fixed-schedule chain: %v, want blockexec.ErrReconfigure", err)
	}
	b := &chainlog.Block{Height: 9, Txs: []chainlog.Tx{{Reconfigure: r}}}
	other := *r
	other.Activation = 41
	otherPayload, err := chainlog.EncodeReconfigure(&other)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.c.CheckSigned(b, []*chain.Tx{sign(admin, id, payload)}); err != nil {
		t.Errorf("with the admin's transaction: %v", err)
	}
	for name, txs := range map[string][]*chain.Tx{
		"none":               nil,
		"a runner's":         {sign(w.d.RunnerKeys[1], id, payload)},
		"another activation": {sign(admin, id, otherPayload)},
	} {
		if err := w.c.CheckSigned(b, txs); !errors.Is(err, chain.ErrUnsigned) {
			t.Errorf("%s: %v, want ErrUnsigned", name, err)
		}
	}
	if err := plain.c.CheckSigned(b, []*chain.Tx{sign(admin, id, payload)}); !errors.Is(err, chain.ErrUnsigned) {
		t.Errorf("no devnet admin: %v, want ErrUnsigned", err)
	}
}

// TestCoreCheckSignedResults (SPEC-NOTES C7): a network block's CIP-2
// results need the runners' signed transactions beside them. A
// ResultSubmit needs the runner's reveal for the job (and, for M > 1, the
// commit it opens); a Verified needs every committee member's, and its
// matching list must be what those reveals make it, with nobody slashed or
// unrewarded. The proposer's Signed lists exactly them.
func TestCoreCheckSignedResults(t *testing.T) {
	w := newWorld(t, 4, 0)
	w.block()
	id := w.submit(2, 20, 1)
	var committee []cip11.Address
	for range 10 {
		if s := seated(w.block(), id); len(s) == 2 {
			committee = s
			break
		}
	}
	if committee == nil {
		t.Fatal("the M = 2 job was not assigned within 10 blocks")
	}
	chainID := uint64(w.d.Genesis.ChainID)
	results := []cip11.Hash{{0x11}, {0x22}} // the members disagree: the first's result wins the tie
	var commitTxs, revealTxs []*chain.Tx
	for i, r := range committee {
		salt := cip11.Hash{byte(i), 0x5a}
		cm := chain.Commitment(results[i], salt)
		ct, err := chain.SignTx(w.keys[r], chainID, chain.TxCommit, 1, id, cm[:])
		if err != nil {
			t.Fatal(err)
		}
		rt, err := chain.SignTx(w.keys[r], chainID, chain.TxReveal, 2, id, chain.RevealPayload(results[i], salt, nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range []*chain.Tx{ct, rt} {
			if _, err := w.c.SubmitTx(tx.Bytes(), w.now); err != nil {
				t.Fatal(err)
			}
		}
		commitTxs, revealTxs = append(commitTxs, ct), append(revealTxs, rt)
	}
	b := w.propose()
	var rs, vs int
	var ver *chainlog.Verified
	for _, tx := range b.Txs {
		if tx.ResultSubmit != nil {
			rs++
		}
		if tx.Verified != nil {
			vs, ver = vs+1, tx.Verified
		}
	}
	if rs != 2 || vs != 1 || !slices.Equal(ver.Matching, committee[:1]) {
		t.Fatalf("block: %d result_submit, %d verified %+v", rs, vs, ver)
	}
	if err := w.c.CheckSigned(b, decodeTxs(t, w.c.Signed(b)...)); err != nil {
		t.Fatalf("the proposer's block with what Signed lists: %v", err)
	}
	all := []*chain.Tx{commitTxs[0], revealTxs[0], commitTxs[1], revealTxs[1]}
	if err := w.c.CheckSigned(b, all); err != nil {
		t.Fatalf("with both members' commits and reveals: %v", err)
	}
	otherMatch := *b
	otherMatch.Txs = slices.Clone(b.Txs)
	for i, tx := range otherMatch.Txs {
		if tx.Verified != nil {
			v := *tx.Verified
			v.Matching = committee
			otherMatch.Txs[i] = chainlog.Tx{Verified: &v}
		}
	}
	slashed := *b
	slashed.Txs = slices.Clone(b.Txs)
	for i, tx := range slashed.Txs {
		if tx.Verified != nil {
			v := *tx.Verified
			v.RunnersToSlash = committee[1:]
			slashed.Txs[i] = chainlog.Tx{Verified: &v}
		}
	}
	for name, c := range map[string]struct {
		b   *chainlog.Block
		txs []*chain.Tx
	}{
		"no transactions":          {b, nil},
		"one member's reveal only": {b, []*chain.Tx{commitTxs[0], revealTxs[0]}},
		"reveals without commits":  {b, []*chain.Tx{revealTxs[0], revealTxs[1]}},
		"another matching list":    {&otherMatch, all},
		"a runner slashed":         {&slashed, all},
	} {
		if err := w.c.CheckSigned(c.b, c.txs); !errors.Is(err, chain.ErrUnsigned) {
			t.Errorf("%s: %v, want ErrUnsigned", name, err)
		}
	}
}

// decodeTxs decodes signed node transactions (as a verifier's layout does).
func decodeTxs(t *testing.T, raws ...[]byte) []*chain.Tx {
	t.Helper()
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

// TestCoreRunnerTxCountsOnce (§7.1 "anti-replayed by the ordinary account
// transaction nonce and signature", SPEC-NOTES C7): a runner-signed
// transaction counts at most once. A heartbeat's nonce is its signing
// height and must be after the runner's on-chain last_heartbeat (and not
// after the block): once a block counts it, last_heartbeat is that block's
// height, so a proposer that re-includes the same signed heartbeat later —
// to keep a dead runner above the floor — has a block every verifier
// refuses (ErrUnsigned wrapping ErrHeartbeatSpent), and the mempool
// neither admits nor proposes a spent one. A replayed registration is an
// invalid block (already registered), and a replayed reveal beside a
// second ResultSubmit changes nothing; a replayed certificate is
// anchor_not_newer (blockexec TestCertificateExecution).
func TestCoreRunnerTxCountsOnce(t *testing.T) {
	w := newWorld(t, 3, 0)
	w.block()
	w.block()
	chainID := uint64(w.d.Genesis.ChainID)
	r := w.d.Genesis.Runners[1].Address
	hb, err := chain.SignTx(w.d.RunnerKeys[1], chainID, chain.TxHeartbeat, 2, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.SubmitTx(hb.Bytes(), w.now); err != nil {
		t.Fatal(err)
	}
	three := w.block().Block
	if !slices.Equal(three.Heartbeats, []uint32{1}) {
		t.Fatalf("block 3 heartbeats %v, want [1]", three.Heartbeats)
	}
	if w.c.MempoolLen() != 0 {
		t.Fatalf("mempool holds %d entries after the heartbeat was counted", w.c.MempoolLen())
	}
	// The same signed heartbeat, one block later and 90 blocks later.
	for _, skip := range []int{0, 89} {
		for range skip {
			w.block()
		}
		replayed := w.propose()
		replayed.Heartbeats = []uint32{1}
		err := w.c.CheckSigned(replayed, decodeTxs(t, hb.Bytes()))
		if !errors.Is(err, chain.ErrUnsigned) || !errors.Is(err, chain.ErrHeartbeatSpent) {
			t.Fatalf("block %d re-including the heartbeat counted in block 3: %v, want ErrUnsigned (ErrHeartbeatSpent)", replayed.Height, err)
		}
		if _, err := w.c.Apply(w.propose(), nil); err != nil { // discard: commit the honest block instead
			t.Fatal(err)
		}
		w.now = w.now.Add(time.Second)
		if _, err := w.c.Commit(w.now); err != nil {
			t.Fatal(err)
		}
	}
	// A heartbeat signed at or before last_heartbeat is refused at admission.
	h := w.c.Height()
	old, err := chain.SignTx(w.d.RunnerKeys[1], chainID, chain.TxHeartbeat, 3, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.SubmitTx(old.Bytes(), w.now); !errors.Is(err, chain.ErrHeartbeatSpent) {
		t.Fatalf("a heartbeat signed at last_heartbeat 3: %v, want ErrHeartbeatSpent", err)
	}
	// One signed for a later height waits, then counts once.
	early, err := chain.SignTx(w.d.RunnerKeys[1], chainID, chain.TxHeartbeat, h+2, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.SubmitTx(early.Bytes(), w.now); err != nil {
		t.Fatal(err)
	}
	if b := w.block().Block; len(b.Heartbeats) != 0 {
		t.Fatalf("block %d counts a heartbeat signed at %d", b.Height, h+2)
	}
	if b := w.block().Block; !slices.Equal(b.Heartbeats, []uint32{1}) {
		t.Fatalf("block %d heartbeats %v, want [1]", b.Height, b.Heartbeats)
	}
	// A replayed registration: the runner is registered, the block invalid.
	again := w.propose()
	st := cip11.U128From64(5)
	rep := chainlog.U64(1_000_000_000)
	again.Registry = []chainlog.RegistryOp{{Op: chainlog.OpRegister, Address: r, Stake: &st, ReputationX1e9: &rep}}
	if err := w.c.Check(again); err == nil {
		t.Fatal("a block registering an already registered runner was accepted")
	}
}
