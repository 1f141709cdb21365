package cometbft

import (
	"context"
	"errors"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	cmttypes "github.com/cometbft/cometbft/api/cometbft/types/v1"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/seed"
)

// epochNet is a hand-driven network (no CometBFT, like handNet) whose
// genesis schedules one reconfiguration: epoch 0 is pool members 0–3,
// epoch 1 adds member 4 at height act (D30). The test plays consensus with
// every epoch's real shares, so it can also sign what a threshold of an
// epoch's members could sign after that epoch is retired.
type epochNet struct {
	sets []node.EpochSet
	ns   []byte
	nw   *Network
	apps []*App
}

func newEpochNet(t *testing.T, act uint64, started int) *epochNet {
	t.Helper()
	// OVERLAP_BLOCKS 4 lets epoch 1 activate at a small height: the
	// schedule must keep activations OVERLAP_BLOCKS apart (§5.4,
	// node.CheckActivations).
	p := node.DefaultGenesisParams()
	p.OverlapBlocks = 4
	o := NetworkOptions{Validators: 4, Members: 5, Seed: 4, BasePort: freeBase(t, 5), Params: &p,
		Epochs: []EpochPlan{{Activation: act, Members: []int{0, 1, 2, 3, 4}}}}
	nw, err := NewNetwork(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := nw.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	addrs, err := voteAddrs(nw.Homes[0].GenDoc, 4)
	if err != nil {
		t.Fatal(err)
	}
	g := nw.Homes[0].Genesis
	en := &epochNet{sets: g.EpochSets(), ns: g.Namespace, nw: nw}
	if len(en.sets) != 2 || en.sets[1].Activation != act {
		t.Fatalf("epochs %+v", en.sets)
	}
	for i := range started {
		h := nw.Homes[i]
		v, err := node.NewValidator(node.ValidatorConfig{Genesis: h.Genesis, Keys: h.Keys, DataDir: t.TempDir(), NoSync: true, Broadcaster: nopEngine{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		app, err := NewApp(AppConfig{Validator: v, Share: seed.Share{Index: uint32(i + 1), Key: h.Keys.Threshold}, VoteAddrs: addrs})
		if err != nil {
			t.Fatal(err)
		}
		en.apps = append(en.apps, app)
	}
	return en
}

// epochAt is the epoch active at height h (D30).
func (en *epochNet) epochAt(h uint64) uint64 {
	if h >= en.sets[1].Activation {
		return 1
	}
	return 0
}

// partials are epoch e's members' partial seed signatures of Round(e, v),
// by share index: pool member i is epoch e's set position i here.
func (en *epochNet) partials(t *testing.T, e, v uint64) []seed.Partial {
	t.Helper()
	var ps []seed.Partial
	for i := range en.sets[e].Set {
		sk, ok := en.nw.Homes[i].Keys.Share(e)
		if !ok {
			t.Fatalf("member %d has no share of epoch %d", i, e)
		}
		p, err := seed.SignPartial(seed.Share{Index: uint32(i + 1), Key: sk}, en.ns, seed.Round{Epoch: e, View: v})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// groupSeed is epoch e's threshold seed of Round(e, v), recovered from the
// first t of its members' partials: what t members of e can produce
// whether or not e is still active.
func (en *epochNet) groupSeed(t *testing.T, e, v uint64) seed.Signature {
	t.Helper()
	n := len(en.sets[e].Set)
	thr, err := seed.Threshold(n)
	if err != nil {
		t.Fatal(err)
	}
	s, err := seed.Recover(n, thr, en.partials(t, e, v)[:thr])
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.VerifySeed(en.sets[e].GroupKey[:], en.ns, seed.Round{Epoch: e, View: v}, s[:]); err != nil {
		t.Fatalf("epoch %d's recovered seed of view %d does not verify under its group key: %v", e, v, err)
	}
	return s
}

// lastCommit is height h's LocalLastCommit: every member of the epoch
// active at h−1 precommits with its partial of Round(epoch_at(h−1), h−1).
func (en *epochNet) lastCommit(t *testing.T, h uint64) abci.ExtendedCommitInfo {
	t.Helper()
	var ci abci.ExtendedCommitInfo
	if h <= 1 {
		return ci
	}
	e := en.epochAt(h - 1)
	for i, p := range en.partials(t, e, h-1) {
		ci.Votes = append(ci.Votes, abci.ExtendedVoteInfo{Validator: abci.Validator{Address: cmtAddr(en.sets[e].Set[i].ConsensusPubKey[:]), Power: 10},
			VoteExtension: p.Signature[:], BlockIdFlag: cmttypes.BlockIDFlagCommit})
	}
	return ci
}

func (en *epochNet) prepare(t *testing.T, h uint64) [][]byte {
	t.Helper()
	res, err := en.apps[0].PrepareProposal(context.Background(), &abci.PrepareProposalRequest{Height: int64(h),
		MaxTxBytes: 1 << 20, LocalLastCommit: en.lastCommit(t, h)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Txs) < 2 {
		t.Fatalf("height %d: proposal of %d transactions (the proposer could not build a block)", h, len(res.Txs))
	}
	return res.Txs
}

// decide has every app accept (ProcessProposal), finalize and commit txs.
func (en *epochNet) decide(t *testing.T, h uint64, txs [][]byte) {
	t.Helper()
	ctx := context.Background()
	for i, a := range en.apps {
		if res, err := a.ProcessProposal(ctx, &abci.ProcessProposalRequest{Height: int64(h), Txs: txs}); err != nil || res.Status != abci.PROCESS_PROPOSAL_STATUS_ACCEPT {
			t.Fatalf("height %d: validator %d: ProcessProposal %v, %v", h, i, res, err)
		}
	}
	for i, a := range en.apps {
		if _, err := a.FinalizeBlock(ctx, &abci.FinalizeBlockRequest{Height: int64(h), Txs: txs}); err != nil {
			t.Fatalf("height %d: validator %d: FinalizeBlock: %v", h, i, err)
		}
		if _, err := a.Commit(ctx, &abci.CommitRequest{}); err != nil {
			t.Fatalf("height %d: validator %d: Commit: %v", h, i, err)
		}
	}
}

// TestVerifyBeaconAndRoundAgainstSchedule (§9.2: the seed signature is
// verified against the active consensus threshold key and R.round must be
// the expected absolute seed round; D30, D31): on a network whose epoch 1
// activates at height 5, App.Verify (ProcessProposal) accepts the honest
// proposals and rejects
//   - at height 6, a parent beacon of Round(0, 5) validly signed under
//     retired epoch 0's group key (recovered here from t of epoch 0's
//     shares, which its members keep): blockheader.ErrBeaconEpoch — the
//     parent round is Round(1, 5);
//   - a header whose proposal round has the wrong epoch, both ways:
//     Round(1, 4) before the activation and Round(0, 5) at it
//     (blockheader.ErrRoundEpoch).
func TestVerifyBeaconAndRoundAgainstSchedule(t *testing.T) {
	const act = 5
	en := newEpochNet(t, act, 2)
	checker := en.apps[1]
	reject := func(h uint64, name string, txs [][]byte, want error) {
		t.Helper()
		_, err := checker.Verify(h, txs)
		if err == nil {
			t.Errorf("height %d: %s: accepted", h, name)
			return
		}
		if !errors.Is(err, want) {
			t.Errorf("height %d: %s: %v, want %v", h, name, err, want)
		}
		res, perr := checker.ProcessProposal(context.Background(), &abci.ProcessProposalRequest{Height: int64(h), Txs: txs})
		if perr != nil || res.Status != abci.PROCESS_PROPOSAL_STATUS_REJECT {
			t.Errorf("height %d: %s: ProcessProposal %v, %v; want REJECT", h, name, res, perr)
		}
	}
	for h := uint64(1); h < act; h++ {
		txs := en.prepare(t, h)
		if h == act-1 {
			reject(h, "round of the next epoch before its activation", withHeader(t, txs, func(x *blockheader.Header) { x.Round.Epoch = 1 }),
				blockheader.ErrRoundEpoch)
		}
		en.decide(t, h, txs)
	}
	txs := en.prepare(t, act)
	if hdr, err := blockheader.Decode(txs[0]); err != nil || hdr.Round != (seed.Round{Epoch: 1, View: act}) || hdr.ParentBeacon.Round != (seed.Round{Epoch: 0, View: act - 1}) {
		t.Fatalf("the activation height's header: %+v, %v; want round (1, %d) and the beacon of (0, %d)", hdr, err, act, act-1)
	}
	reject(act, "round of the retired epoch at the activation height", withHeader(t, txs, func(x *blockheader.Header) { x.Round.Epoch = 0 }),
		blockheader.ErrRoundEpoch)
	en.decide(t, act, txs)

	const h = act + 1
	valid := en.prepare(t, h)
	if _, err := checker.Verify(h, valid); err != nil {
		t.Fatalf("the honest proposal of height %d: %v", h, err)
	}
	stale := en.groupSeed(t, 0, act) // Round(0, 5) under epoch 0's key: a valid signature of the wrong round
	reject(h, "stale-epoch beacon Round(0, h−1)", withHeader(t, valid, func(x *blockheader.Header) {
		x.ParentBeacon.Round = seed.Round{Epoch: 0, View: act}
		x.ParentBeacon.Signature = stale
	}), blockheader.ErrBeaconEpoch)
	en.decide(t, h, valid)
}
