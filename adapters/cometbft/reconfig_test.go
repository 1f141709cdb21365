package cometbft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmttypes "github.com/cometbft/cometbft/types"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/nodetx"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/wire"
)

// reconfigOpts is a network of a 5-validator pool whose genesis schedules
// two reconfigurations (D30, §5.3–§5.4): epoch 0 is pool members 0–3,
// epoch 1 adds member 4 at addAt, epoch 2 removes member 0 at removeAt.
func reconfigOpts(t *testing.T, addAt, removeAt uint64, runners int) NetworkOptions {
	t.Helper()
	p := node.DefaultGenesisParams()
	p.OverlapBlocks = 6
	o := NetworkOptions{Validators: 4, Runners: runners, Seed: 3, BasePort: freeBase(t, 5), Params: &p}
	o.Members, o.Epochs = AddThenRemove(4, addAt, removeAt)
	return o
}

// TestNetworkPlansRejected: a plan CometBFT or §5.4 cannot carry is refused
// when the network is generated.
func TestNetworkPlansRejected(t *testing.T) {
	for name, o := range map[string]NetworkOptions{
		"unchanged set (§5.4: no new epoch)":  {Validators: 4, Epochs: []EpochPlan{{Activation: 10, Members: []int{0, 1, 2, 3}}}},
		"activation 2 (updates apply at h+2)": {Validators: 4, Members: 5, Epochs: []EpochPlan{{Activation: 2, Members: []int{0, 1, 2, 3, 4}}}},
		"members out of order":                {Validators: 4, Members: 5, Epochs: []EpochPlan{{Activation: 10, Members: []int{4, 1, 2, 3}}}},
		"member outside the pool":             {Validators: 4, Epochs: []EpochPlan{{Activation: 10, Members: []int{0, 1, 2, 3, 4}}}},
		"activations too close":               {Validators: 4, Members: 5, Epochs: []EpochPlan{{Activation: 10, Members: []int{0, 1, 2, 3, 4}}, {Activation: 12, Members: []int{1, 2, 3, 4}}}},
	} {
		if _, err := NewNetwork(o); err == nil {
			t.Errorf("%s: NewNetwork accepted %+v", name, o.Epochs)
		}
	}
}

// submitLead is how many blocks before an activation the in-band admin
// submits its reconfiguration (cmd/internal/devnet.ReconfigureSubmitLead:
// blockexec.ReconfigureLeadBlocks and 4 blocks for its inclusion).
const submitLead = blockexec.ReconfigureLeadBlocks + 4

// TestReconfigurationOnNetwork runs a live network through two scheduled
// reconfigurations: a fifth validator joins at addAt, the first leaves at
// removeAt. Consensus and CIP-11 change together (D30): CometBFT's commit
// of every height is signed by exactly that height's epoch set; each parent
// beacon is the seed of Round(epoch(h−1), h−1) and verifies under that
// epoch's group key; every validator, the joiner and the leaver included,
// computes the same AppHash at every height; and their block logs replay.
//
// It runs twice: with the reconfigurations scheduled in the genesis, and in
// band (SPEC-NOTES C11), where the test is the devnet dealer and admin:
// submitLead blocks before each activation it hands the epoch's
// shares to its members and submits the admin's transaction (after
// checking that a stranger's and one too close to its
// activation are refused); there a restarted validator rebuilds the
// epochs from its block log and goes on.
func TestReconfigurationOnNetwork(t *testing.T) {
	t.Run("scheduled", func(t *testing.T) { testReconfiguration(t, false) })
	t.Run("in band", func(t *testing.T) { testReconfiguration(t, true) })
}

func testReconfiguration(t *testing.T, inBand bool) {
	addAt, removeAt, until := uint64(10), uint64(20), uint64(30)
	o := reconfigOpts(t, addAt, removeAt, 0)
	if inBand {
		addAt, removeAt, until = 16, 30, 40
		o = reconfigOpts(t, addAt, removeAt, 0)
		o.InBand = true
	}
	d := &digests{}
	nw, nodes, stop := startOpts(t, o, d.hook)
	dir := filepath.Dir(nw.Homes[0].Dir)
	g := nw.Homes[0].Genesis
	if inBand {
		if len(g.EpochSets()) != 1 || g.ReconfigAdmin == nil {
			t.Fatalf("in-band genesis: %d epochs, admin %v", len(g.EpochSets()), g.ReconfigAdmin)
		}
		dealer, err := devkeys.LoadDealer(filepath.Join(dir, "dealer.json")) // what Write stored
		if err != nil {
			t.Fatal(err)
		}
		// The submission must reach validator 2 at least
		// ReconfigureLeadBlocks before the activation: everything else is
		// done before, and the wait is for validator 2 itself (waiting for
		// every node let a lagging one hold the submission back until
		// validator 2 was 6 blocks past the mark, beside a CPU burner).
		acts := []uint64{addAt, removeAt}
		txs, deals := make([][]byte, len(acts)), make([]map[int][32]byte, len(acts))
		for e, act := range acts {
			tx, shares, err := dealer.Reconfiguration(e+1, act)
			if err != nil {
				t.Fatal(err)
			}
			if mem, _, err := nw.Dealer.Reconfiguration(e+1, 0); err != nil || !bytes.Equal(mem, tx) {
				t.Fatalf("dealer.json's reconfiguration differs from the generated dealer's: %v", err)
			}
			txs[e], deals[e] = tx, shares
		}
		refuseReconfigurations(t, nw, nodes[0].V, txs[0])
		for e, act := range acts {
			waitHeight(t, nodes[2:3], act-submitLead, 60*time.Second)
			tx, shares := txs[e], deals[e]
			for pos, sec := range shares {
				if err := nodes[pos].AddEpochShare(uint64(e+1), sec); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := nodes[2].V.SubmitTx(tx); err != nil {
				t.Fatalf("epoch %d: %v", e+1, err)
			}
		}
	}
	waitHeight(t, nodes, until, 90*time.Second)

	sets := nodes[0].V.Epochs()
	if len(sets) != 3 || len(sets[1].Set) != 5 || len(sets[2].Set) != 4 || sets[1].Activation != addAt || sets[2].Activation != removeAt {
		t.Fatalf("epochs: %+v", sets)
	}
	for i, nd := range nodes {
		if got := nd.V.Epochs(); len(got) != 3 || got[2].GroupKey != sets[2].GroupKey {
			t.Fatalf("validator %d knows %d epochs", i, len(got))
		}
	}
	epochAt := func(h uint64) node.EpochSet {
		e := sets[0]
		for _, x := range sets[1:] {
			if x.Activation <= h {
				e = x
			}
		}
		return e
	}
	// 1. CometBFT's signers follow the epochs.
	bs := nodes[1].cmt.BlockStore()
	for h := int64(1); h < int64(until); h++ {
		c := bs.LoadBlockCommit(h)
		if c == nil {
			t.Fatalf("no commit for %d", h)
		}
		want := map[string]bool{}
		for _, v := range epochAt(uint64(h)).Set {
			want[string(cmttypes.Address(pubAddr(v)))] = true
		}
		signed := 0
		for _, s := range c.Signatures {
			if s.BlockIDFlag != cmttypes.BlockIDFlagCommit {
				continue
			}
			if !want[string(s.ValidatorAddress)] {
				t.Fatalf("height %d: commit signed by %X, not in epoch %d's set", h, s.ValidatorAddress, epochAt(uint64(h)).Epoch)
			}
			signed++
		}
		if len(c.Signatures) != len(want) {
			t.Fatalf("height %d: commit has %d signature slots, epoch %d has %d validators", h, len(c.Signatures), epochAt(uint64(h)).Epoch, len(want))
		}
		if tt, _ := seed.Threshold(len(want)); signed < tt {
			t.Fatalf("height %d: %d signers, below t = %d", h, signed, tt)
		}
	}
	// 2. Parent beacons: Round(epoch(h−1), h−1) under that epoch's key.
	blocks := readBlockLog(t, filepath.Join(dir, "v4", "node"))
	for _, b := range blocks {
		h := uint64(b.Height)
		if h < 2 || h > until {
			continue
		}
		pb := b.ParentBeacon
		e := epochAt(h - 1)
		if pb == nil || uint64(pb.Epoch) != e.Epoch || uint64(pb.View) != h-1 {
			t.Fatalf("block %d: parent beacon %+v, want round (%d, %d)", h, pb, e.Epoch, h-1)
		}
		if err := seed.VerifySeed(e.GroupKey[:], g.Namespace, seed.Round{Epoch: e.Epoch, View: h - 1}, pb.Signature[:]); err != nil {
			t.Fatalf("block %d: parent beacon does not verify under epoch %d's group key: %v", h, e.Epoch, err)
		}
	}
	// 3. AppHashes agree among all five at every height.
	d.mu.Lock()
	for h := uint64(1); h <= until; h++ {
		var first cip11.Hash
		for i := range nodes {
			x, ok := d.m[h][i]
			if !ok {
				d.mu.Unlock()
				t.Fatalf("validator %d did not finalize %d", i, h)
			}
			if i == 0 {
				first = x
			} else if x != first {
				d.mu.Unlock()
				t.Fatalf("height %d: validator %d's AppHash %x differs from validator 0's %x", h, i, x, first)
			}
		}
	}
	d.mu.Unlock()
	if inBand { // 4. a restarted validator rebuilds the epochs from its block log
		home := nw.Homes[1].Dir
		if err := nodes[1].Close(); err != nil {
			t.Fatal(err)
		}
		nodes[1] = nil
		nd, err := StartNode(context.Background(), NodeConfig{Home: home, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		nodes[1] = nd
		if got := nd.V.Epochs(); len(got) != 3 || got[1].Activation != addAt || got[2].Activation != removeAt {
			t.Fatalf("restarted: epochs %+v", got)
		}
		waitHeight(t, nodes, until+5, 60*time.Second)
	}
	stop()
	// 5. The joiner's and the leaver's block logs replay (§17).
	for _, i := range []int{0, 4} {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("v%d", i), "node", "blocks.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := replay.Run(f, replay.Config{})
		f.Close()
		if err != nil || uint64(sum.Blocks) < until {
			t.Fatalf("v%d's block log: %d blocks, %v", i, sum.Blocks, err)
		}
	}
}

// refuseReconfigurations: a chain admits only the devnet admin's
// reconfiguration, one that the next block could still carry.
func refuseReconfigurations(t *testing.T, nw *Network, v *node.Validator, good []byte) {
	t.Helper()
	gt, err := nodetx.DecodeTx(good)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := wire.NewRunnerKey([32]byte{0x5e, 1})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := nodetx.SignTx(stranger, gt.ChainID, nodetx.TxReconfigure, gt.Nonce, cip11.Hash{}, gt.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.SubmitTx(bad.Bytes()); !errors.Is(err, node.ErrBadRequest) {
		t.Errorf("a stranger's reconfiguration: %v, want ErrBadRequest", err)
	}
	close, _, err := nw.Dealer.Reconfiguration(1, v.Height()+3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.SubmitTx(close); !errors.Is(err, node.ErrBadRequest) || !strings.Contains(err.Error(), "blocks after block") {
		t.Errorf("a reconfiguration 3 blocks ahead: %v, want ErrBadRequest (lead)", err)
	}
}

func pubAddr(v node.GenesisValidator) []byte {
	return cmtAddr(v.ConsensusPubKey[:])
}

// TestInBandShareChecked: a member of an in-band epoch (SPEC-NOTES C11)
// signs with the share the devnet dealer handed it only when it is its
// public share in the epoch's set; without one, or with another, ExtendVote
// at the activation refuses (logged), and the key file is read again when
// the share is missing (a process network's dealer writes it there): the
// schedule then publishes it, and later votes read it from there.
func TestInBandShareChecked(t *testing.T) {
	hn := newHandNet(t, 4, 0, 1)
	a := hn.apps[0]
	g := *a.g
	admin := cip11.Address{1}
	g.ReconfigAdmin = &admin
	a.g = &g
	keys, err := node.NewValidatorKeys([32]byte{1}, hn.nw.Homes[0].Keys.Threshold.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "validator.key")
	// Epoch 1: the four and a fifth (the §5.4 schedule takes only a
	// changed set), a new dealing.
	group := seed.DeriveSecretKey([]byte("epoch-1 group"))
	deal, err := seed.DealShares(group, 5, 4, &keccakReader{s: 99})
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := deal.Public.PublicShares(5)
	if err != nil {
		t.Fatal(err)
	}
	fifth := g.Set[3]
	fifth.PeerPubKey = cip11.Hash{0xff, 0xff, 0xff, 0xff} // last in the canonical order: the others keep their indices
	ck := cip11.Hash{5}
	fifth.ConsensusPubKey = &ck
	es := node.EpochSet{Epoch: 1, Activation: 20, GroupKey: deal.Public.GroupKey(), Set: append(slices.Clone(g.Set), fifth)}
	for i := range es.Set {
		es.Set[i].ThresholdPubKey = pubs[i]
	}
	// schedule is the App's schedule over keys and keyFile, with epoch 1
	// committed (the validator's loop extends its own so at the commit).
	schedule := func(keys *node.ValidatorKeys) *node.Schedules {
		s, err := node.NewSchedules(node.ScheduleConfig{Genesis: &g, Keys: keys, KeyFile: keyFile})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Extend(append(g.EpochSets(), es)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a.sched = schedule(keys)
	ext := func() error {
		_, err := a.ExtendVote(context.Background(), &abci.ExtendVoteRequest{Height: 20})
		return err
	}
	if err := ext(); err == nil {
		t.Fatal("extended a vote of epoch 1 without its share")
	}
	if err := keys.AddEpochShare(1, deal.Shares[1].Key.Bytes()); err != nil { // another member's
		t.Fatal(err)
	}
	if err := ext(); err == nil {
		t.Fatal("extended a vote with another member's share")
	}
	lacking, err := node.NewValidatorKeys([32]byte{1}, hn.nw.Homes[0].Keys.Threshold.Bytes()) // lacks it: read from the file
	if err != nil {
		t.Fatal(err)
	}
	a.sched = schedule(lacking)
	if sh := a.sched.Load().Epoch(1).Share; sh != nil {
		t.Fatal("a share before the dealer handed one")
	}
	own, err := node.NewValidatorKeys([32]byte{1}, hn.nw.Homes[0].Keys.Threshold.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := own.AddEpochShare(1, deal.Shares[0].Key.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := own.Write(keyFile); err != nil {
		t.Fatal(err)
	}
	if err := ext(); err != nil {
		t.Fatalf("with its own share in the key file: %v", err)
	}
	if sh := a.sched.Load().Epoch(1).Share; sh == nil || sh.Index != 1 {
		t.Fatalf("the share read from the key file is not published: %+v", sh)
	}
	// entering the schedule with the share in the key file: loaded then
	if sh := schedule(lacking).Load().Epoch(1).Share; sh == nil || sh.Index != 1 {
		t.Fatalf("the key file's share is not loaded when the epoch enters the schedule: %+v", sh)
	}
}
