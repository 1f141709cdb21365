package cometbft

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	cmttypes "github.com/cometbft/cometbft/api/cometbft/types/v1"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/wire"
)

// nopEngine stands in for CometBFT's mempool when a test drives the ABCI
// calls by hand: submissions reach the core through App.CheckTx.
type nopEngine struct{}

func (nopEngine) BroadcastTx([]byte) error  { return nil }
func (nopEngine) BroadcastJob([]byte) error { return nil }

// handNet is a generated network whose first validators run as bare Apps
// (no CometBFT): the test plays consensus, building LocalLastCommit from
// real partial seed signatures of every share (D31).
type handNet struct {
	nw    *Network
	ns    []byte
	addrs [][]byte // CometBFT vote addresses, by share index − 1
	t     int      // the seed threshold
	apps  []*App
	memo  map[[2]uint64]seed.Partial // (share index, view) → partial
}

func newHandNet(tb testing.TB, validators, runners, started int) *handNet {
	tb.Helper()
	return newHandNetWith(tb, validators, runners, started, nil)
}

// newHandNetWith is newHandNet whose validator i submits through
// engine(i) (nil: nopEngine).
func newHandNetWith(tb testing.TB, validators, runners, started int, engine func(i int) node.Broadcaster) *handNet {
	tb.Helper()
	nw, err := NewNetwork(NetworkOptions{Validators: validators, Runners: runners, Seed: 1, BasePort: freeBase(tb, validators)})
	if err != nil {
		tb.Fatal(err)
	}
	if err := nw.Write(tb.TempDir()); err != nil {
		tb.Fatal(err)
	}
	addrs, err := voteAddrs(nw.Homes[0].GenDoc, validators)
	if err != nil {
		tb.Fatal(err)
	}
	thr, err := seed.Threshold(validators)
	if err != nil {
		tb.Fatal(err)
	}
	hn := &handNet{nw: nw, ns: nw.Homes[0].Genesis.Namespace, addrs: addrs, t: thr}
	for i := range started {
		h := nw.Homes[i]
		var eng node.Broadcaster = nopEngine{}
		if engine != nil {
			eng = engine(i)
		}
		v, err := node.NewValidator(node.ValidatorConfig{Genesis: h.Genesis, Keys: h.Keys, DataDir: tb.TempDir(), NoSync: true, Broadcaster: eng})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { v.Close() })
		app, err := NewApp(AppConfig{Validator: v, Share: hn.share(i), VoteAddrs: addrs})
		if err != nil {
			tb.Fatal(err)
		}
		hn.apps = append(hn.apps, app)
	}
	return hn
}

// share is validator i's threshold share: index i+1 (D31).
func (hn *handNet) share(i int) seed.Share {
	return seed.Share{Index: uint32(i + 1), Key: hn.nw.Homes[i].Keys.Threshold}
}

// partial is validator i's partial seed signature of Round(0, view), what
// its ExtendVote returns at that height (signed once, then remembered).
func (hn *handNet) partial(tb testing.TB, i int, view uint64) seed.Partial {
	tb.Helper()
	k := [2]uint64{uint64(i), view}
	if p, ok := hn.memo[k]; ok {
		return p
	}
	p, err := seed.SignPartial(hn.share(i), hn.ns, round(view))
	if err != nil {
		tb.Fatal(err)
	}
	if hn.memo == nil {
		hn.memo = map[[2]uint64]seed.Partial{}
	}
	hn.memo[k] = p
	return p
}

// groupSeed is the threshold seed of view, recovered from the first t
// validators' partials.
func (hn *handNet) groupSeed(tb testing.TB, view uint64) seed.Signature {
	tb.Helper()
	var ps []seed.Partial
	for i := range hn.t {
		ps = append(ps, hn.partial(tb, i, view))
	}
	s, err := seed.Recover(len(hn.addrs), hn.t, ps)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// lastCommit is the LocalLastCommit of height h: every validator's
// precommit carrying its partial of Round(0, h−1).
func (hn *handNet) lastCommit(tb testing.TB, h uint64) abci.ExtendedCommitInfo {
	tb.Helper()
	var ci abci.ExtendedCommitInfo
	if h <= 1 {
		return ci
	}
	for i, a := range hn.addrs {
		p := hn.partial(tb, i, h-1)
		ci.Votes = append(ci.Votes, abci.ExtendedVoteInfo{Validator: abci.Validator{Address: a, Power: 10},
			VoteExtension: p.Signature[:], BlockIdFlag: cmttypes.BlockIDFlagCommit})
	}
	return ci
}

// prepare has app p build the proposal of height h over the raw mempool txs.
func (hn *handNet) prepare(tb testing.TB, p int, h uint64, mempool [][]byte) [][]byte {
	tb.Helper()
	res, err := hn.apps[p].PrepareProposal(context.Background(), &abci.PrepareProposalRequest{Height: int64(h),
		MaxTxBytes: 1 << 20, Txs: mempool, LocalLastCommit: hn.lastCommit(tb, h), ProposerAddress: hn.addrs[p]})
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.Txs) < 2 {
		tb.Fatalf("height %d: proposal of %d transactions (no header/body: the proposer could not build a block)", h, len(res.Txs))
	}
	return res.Txs
}

// decide has every other app accept txs (ProcessProposal), then every app
// finalize and commit it; it returns the common state digest.
func (hn *handNet) decide(tb testing.TB, p int, h uint64, txs [][]byte) cip11.Hash {
	tb.Helper()
	ctx := context.Background()
	for i, a := range hn.apps {
		if i == p {
			continue
		}
		res, err := a.ProcessProposal(ctx, &abci.ProcessProposalRequest{Height: int64(h), Txs: txs, ProposerAddress: hn.addrs[p]})
		if err != nil || res.Status != abci.PROCESS_PROPOSAL_STATUS_ACCEPT {
			tb.Fatalf("height %d: validator %d: ProcessProposal %v, %v", h, i, res, err)
		}
	}
	var digest []byte
	for i, a := range hn.apps {
		res, err := a.FinalizeBlock(ctx, &abci.FinalizeBlockRequest{Height: int64(h), Txs: txs, ProposerAddress: hn.addrs[p]})
		if err != nil {
			tb.Fatalf("height %d: validator %d: FinalizeBlock: %v", h, i, err)
		}
		if digest != nil && !bytes.Equal(digest, res.AppHash) {
			tb.Fatalf("height %d: validator %d: AppHash %x, validator 0 %x", h, i, res.AppHash, digest)
		}
		digest = res.AppHash
		if _, err := a.Commit(ctx, &abci.CommitRequest{}); err != nil {
			tb.Fatalf("height %d: validator %d: Commit: %v", h, i, err)
		}
	}
	return cip11.Hash(digest)
}

// withHeader re-encodes txs with header transaction 0 changed by f.
func withHeader(tb testing.TB, txs [][]byte, f func(*blockheader.Header)) [][]byte {
	tb.Helper()
	h, err := blockheader.Decode(txs[0])
	if err != nil {
		tb.Fatal(err)
	}
	f(h)
	hb, err := blockheader.Encode(h)
	if err != nil {
		tb.Fatal(err)
	}
	out := slices.Clone(txs)
	out[0] = hb
	return out
}

// TestVerifyRejects builds a real proposal (validator 0, height 3, carrying
// a job submit whose spec validator 1 never saw), has validator 1 check it
// and each mutation of it, and asserts the sentinel of each rejection
// (D31, D32; §7.2, §9.2).
func TestVerifyRejects(t *testing.T) {
	hn := newHandNet(t, 4, 8, 2)
	proposer, checker := hn.apps[0], hn.apps[1]
	for h := uint64(1); h <= 2; h++ {
		hn.decide(t, 0, h, hn.prepare(t, 0, h, nil))
	}
	const h = 3
	spec := &node.JobSpec{Submitter: cip11.Address{7}, Kind: 1, Runners: 1, TimeoutBlocks: 20, Nonce: 1}
	res, err := proposer.CheckTx(context.Background(), &abci.CheckTxRequest{Tx: spec.Encode(), Type: abci.CHECK_TX_TYPE_CHECK})
	if err != nil || res.Code != CodeOK {
		t.Fatalf("CheckTx: %v %v", res, err)
	}
	valid := hn.prepare(t, 0, h, [][]byte{spec.Encode()})
	if len(valid) != 3 || !bytes.Equal(valid[2], spec.Encode()) {
		t.Fatalf("proposal: %d transactions, want header, body, the spec", len(valid))
	}
	p, err := checker.Verify(h, valid)
	if err != nil {
		t.Fatalf("the valid proposal is rejected: %v", err)
	}
	if len(p.Block.Txs) != 1 || p.Block.Txs[0].Submit == nil || p.Block.Txs[0].Submit.JobID != spec.ID() {
		t.Fatalf("the valid proposal's body: %+v, want the job's submit", p.Block.Txs)
	}
	if p.Header.Presence == nil || p.Header.Presence[0] != presence.Version {
		t.Fatalf("the proposal's presence field %x: want a PresenceInputV1 (present-first is on)", p.Header.Presence)
	}
	// The seed of another round: a valid G1 point and a valid group seed,
	// of round h−2 rather than the parent's h−1.
	other := hn.groupSeed(t, h-2)
	if err := seed.VerifySeed(hn.nw.Homes[0].Genesis.Validator.ThresholdPubKey[:], hn.ns, round(h-2), other[:]); err != nil {
		t.Fatalf("the recovered seed of round %d does not verify: %v", h-2, err)
	}
	header := func(f func(*blockheader.Header)) [][]byte { return withHeader(t, valid, f) }
	withRaw := func(raw ...[]byte) [][]byte { return append(slices.Clone(valid[:2]), raw...) }
	junkSpec := spec.Encode()
	junkSpec = junkSpec[:len(junkSpec)-1] // truncated: shorter than a spec header
	otherSpec := *spec
	otherSpec.Nonce = 2
	cases := []struct {
		name string
		txs  [][]byte
		want []error
	}{
		{"forged parent beacon (seed of round h-2)", header(func(x *blockheader.Header) { x.ParentBeacon.Signature = other }),
			[]error{blocklayout.ErrBeaconInvalid, seed.ErrSeedSignatureInvalid}},
		{"parent beacon: the genesis beacon", header(func(x *blockheader.Header) {
			x.ParentBeacon.Signature = seed.Signature(hn.nw.Homes[0].Genesis.GenesisBeacon.Signature)
		}), []error{blocklayout.ErrBeaconInvalid}},
		{"parent beacon: a partial, not the group seed", header(func(x *blockheader.Header) { x.ParentBeacon.Signature = hn.partial(t, 0, h-1).Signature }),
			[]error{blocklayout.ErrBeaconInvalid}},
		{"header and body swapped", [][]byte{valid[1], valid[0], valid[2]}, []error{blocklayout.ErrHeaderMissing}},
		{"no transactions", nil, []error{blocklayout.ErrHeaderMissing}},
		{"header twice (second as transaction 1)", [][]byte{valid[0], valid[0], valid[1], valid[2]}, []error{blocklayout.ErrHeaderMisplaced}},
		{"a second header after the submissions", withRaw(valid[2], valid[0]), []error{blocklayout.ErrHeaderMisplaced}},
		{"body missing", [][]byte{valid[0]}, []error{blocklayout.ErrBodyMissing}},
		{"consumed seed of the proposal round", header(func(x *blockheader.Header) {
			x.ConsumedSeeds = seed.ConsumedSeedsV1{{Round: round(h), Signature: other}}
		}), []error{blockheader.ErrSeedRound}},
		{"consumed seed of a future round", header(func(x *blockheader.Header) {
			x.ConsumedSeeds = seed.ConsumedSeedsV1{{Round: round(h - 2), Signature: other}, {Round: round(h + 5), Signature: other}}
		}), []error{blockheader.ErrSeedRound}},
		{"consumed seed no record consumes", header(func(x *blockheader.Header) {
			x.ConsumedSeeds = seed.ConsumedSeedsV1{{Round: round(h - 2), Signature: other}}
		}), []error{chain.ErrInvalidBlock, seed.ErrConsumedSeedUnused}},
		{"presence: wrong version byte", header(func(x *blockheader.Header) { x.Presence[0] = presence.Version + 1 }),
			[]error{chain.ErrInvalidBlock, presence.ErrBlockPresenceInvalid, presence.ErrUnknownVersion}},
		{"presence: truncated", header(func(x *blockheader.Header) { x.Presence = x.Presence[:1] }),
			[]error{chain.ErrInvalidBlock, presence.ErrBlockPresenceInvalid}},
		{"presence: absent", header(func(x *blockheader.Header) { x.Presence = nil }),
			[]error{chain.ErrInvalidBlock, presence.ErrBlockPresenceInvalid}},
		{"submit without its spec", withRaw(), []error{blocklayout.ErrSpecMissing}},
		{"submit with another job's spec", withRaw(otherSpec.Encode()), []error{blocklayout.ErrSpecMissing}},
		{"garbage raw transaction", withRaw(valid[2], []byte("garbage")), []error{blocklayout.ErrBadTx}},
		{"malformed job spec", withRaw(valid[2], junkSpec), []error{blocklayout.ErrBadTx, node.ErrBadRequest}},
		{"body malformed", [][]byte{valid[0], []byte(blocklayout.BodyMagic + "{"), valid[2]}, []error{blocklayout.ErrBodyMalformed}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := checker.Verify(h, c.txs)
			t.Log(err)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Fatalf("error %v is not %v", err, w)
				}
			}
		})
	}
	// ProcessProposal answers with the verdict; the checks left no trace:
	// the valid proposal is still accepted and decided.
	ctx := context.Background()
	rej, err := checker.ProcessProposal(ctx, &abci.ProcessProposalRequest{Height: h, Txs: cases[0].txs})
	if err != nil || rej.Status != abci.PROCESS_PROPOSAL_STATUS_REJECT {
		t.Fatalf("ProcessProposal of a forged beacon: %v, %v; want REJECT", rej, err)
	}
	if _, err := checker.Verify(h, valid); err != nil {
		t.Fatalf("the valid proposal after the rejections: %v", err)
	}
	hn.decide(t, 0, h, valid)
	last := checker.v.LastBlock()
	if last == nil || uint64(last.Height) != h || len(last.Out.Assignments) != 1 || last.Out.Assignments[0].JobID != spec.ID() {
		t.Fatalf("validator 1 after height %d: %+v", h, last)
	}
}

// TestVerifyExtensionRejects: a vote extension is exactly the sender's
// partial of Round(0, h) (D31).
func TestVerifyExtensionRejects(t *testing.T) {
	hn := newHandNet(t, 4, 0, 1)
	a := hn.apps[0]
	const h = 7
	for i := range hn.addrs {
		p := hn.partial(t, i, h)
		if err := a.VerifyExtension(h, hn.addrs[i], p.Signature[:]); err != nil {
			t.Fatalf("validator %d's partial of height %d: %v", i, h, err)
		}
	}
	good := hn.partial(t, 1, h)
	otherHeight := hn.partial(t, 1, h+1)
	otherIndex := hn.partial(t, 2, h)
	group := hn.groupSeed(t, h)
	prevHeight := hn.partial(t, 1, h-1)
	cases := []struct {
		name string
		addr []byte
		ext  []byte
		want error
	}{
		{"partial of another height", hn.addrs[1], otherHeight.Signature[:], seed.ErrSeedSignatureInvalid},
		{"partial of the previous height", hn.addrs[1], prevHeight.Signature[:], seed.ErrSeedSignatureInvalid},
		{"another validator's partial", hn.addrs[1], otherIndex.Signature[:], seed.ErrSeedSignatureInvalid},
		{"the group seed itself", hn.addrs[1], group[:], seed.ErrSeedSignatureInvalid},
		{"47 bytes", hn.addrs[1], good.Signature[:47], nil},
		{"49 bytes", hn.addrs[1], append(slices.Clone(good.Signature[:]), 0), nil},
		{"empty", hn.addrs[1], nil, nil},
		{"48 bytes, not a G1 point", hn.addrs[1], bytes.Repeat([]byte{0xff}, 48), nil},
		{"unknown validator", bytes.Repeat([]byte{1}, 20), good.Signature[:], nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := a.VerifyExtension(h, c.addr, c.ext)
			if !errors.Is(err, ErrExtension) {
				t.Fatalf("error %v, want ErrExtension", err)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v is not %v", err, c.want)
			}
		})
	}
	ctx := context.Background()
	for _, c := range []struct {
		ext  []byte
		want abci.VerifyVoteExtensionStatus
	}{{good.Signature[:], abci.VERIFY_VOTE_EXTENSION_STATUS_ACCEPT}, {otherHeight.Signature[:], abci.VERIFY_VOTE_EXTENSION_STATUS_REJECT}} {
		res, err := a.VerifyVoteExtension(ctx, &abci.VerifyVoteExtensionRequest{Height: h, ValidatorAddress: hn.addrs[1], VoteExtension: c.ext})
		if err != nil || res.Status != c.want {
			t.Fatalf("VerifyVoteExtension: %v, %v; want %v", res, err, c.want)
		}
	}
	// ExtendVote produces what VerifyExtension accepts, and it is the
	// share's partial (index 1 here).
	ev, err := a.ExtendVote(ctx, &abci.ExtendVoteRequest{Height: h})
	if err != nil {
		t.Fatal(err)
	}
	if want := hn.partial(t, 0, h); !bytes.Equal(ev.VoteExtension, want.Signature[:]) {
		t.Fatalf("ExtendVote %x, want the partial %x", ev.VoteExtension, want.Signature)
	}
}

// round is Round(0, h): the tests' networks have one epoch (D30).
func round(h uint64) seed.Round { return seed.Round{Epoch: 0, View: h} }

// TestVerifyRejectsUnsignedHeartbeat (SPEC-NOTES C7): a heartbeat in a
// network block's body needs its runner's signed TxHeartbeat among the
// block's submissions. The proposer carries it (its core's Signed); the
// same body without it is chain.ErrUnsigned at every other validator, so a
// proposer cannot keep a silent runner above the §7.1 floor.
func TestVerifyRejectsUnsignedHeartbeat(t *testing.T) {
	hn := newHandNet(t, 4, 8, 2)
	proposer, checker := hn.apps[0], hn.apps[1]
	for h := uint64(1); h <= 2; h++ {
		hn.decide(t, 0, h, hn.prepare(t, 0, h, nil))
	}
	const h = 3
	g := hn.nw.Homes[0].Genesis
	k, err := wire.NewRunnerKey(devkeys.Runner(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	hb, err := chain.SignTx(k, uint64(g.ChainID), chain.TxHeartbeat, h-1, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := proposer.CheckTx(context.Background(), &abci.CheckTxRequest{Tx: hb.Bytes(), Type: abci.CHECK_TX_TYPE_CHECK})
	if err != nil || res.Code != CodeOK {
		t.Fatalf("CheckTx of runner 2's heartbeat: %v %v", res, err)
	}
	valid := hn.prepare(t, 0, h, [][]byte{hb.Bytes()}) // CometBFT's mempool (the only one) hands the proposer the heartbeat
	p, err := checker.Verify(h, valid)
	if err != nil {
		t.Fatalf("the proposal with the heartbeat and its transaction is rejected: %v", err)
	}
	if len(p.Block.Heartbeats) != 1 || len(valid) != 3 || !bytes.Equal(valid[2], hb.Bytes()) {
		t.Fatalf("proposal: heartbeats %v, %d transactions: want one heartbeat and its signed transaction", p.Block.Heartbeats, len(valid))
	}
	if _, err := checker.Verify(h, valid[:2]); !errors.Is(err, chain.ErrUnsigned) {
		t.Fatalf("the heartbeat without its transaction: %v, want chain.ErrUnsigned", err)
	}
}

// TestVerifyRejectsUnsignedResult (SPEC-NOTES C7): a network block's
// ResultSubmit and Verified need the committee runner's signed reveal among
// the block's submissions. The proposer carries it (its core's Signed); the
// same block without it is chain.ErrUnsigned at every other validator, so a
// proposer cannot complete a job, and write its MRU record, on its own
// authority.
func TestVerifyRejectsUnsignedResult(t *testing.T) {
	hn := newHandNet(t, 4, 8, 2)
	proposer, checker := hn.apps[0], hn.apps[1]
	for h := uint64(1); h <= 2; h++ {
		hn.decide(t, 0, h, hn.prepare(t, 0, h, nil))
	}
	spec := &node.JobSpec{Submitter: cip11.Address{7}, Kind: 1, Runners: 1, TimeoutBlocks: 20, Nonce: 1}
	if res, err := proposer.CheckTx(context.Background(), &abci.CheckTxRequest{Tx: spec.Encode(), Type: abci.CHECK_TX_TYPE_CHECK}); err != nil || res.Code != CodeOK {
		t.Fatalf("CheckTx: %v %v", res, err)
	}
	hn.decide(t, 0, 3, hn.prepare(t, 0, 3, [][]byte{spec.Encode()})) // M = 1: assigned at once
	jv, ok := proposer.v.Job(spec.ID())
	if !ok || len(jv.Committee) != 1 {
		t.Fatalf("job after block 3: %+v", jv)
	}
	var key *wire.RunnerKey
	for i := range 8 {
		k, err := wire.NewRunnerKey(devkeys.Runner(1, i))
		if err != nil {
			t.Fatal(err)
		}
		if k.Address() == jv.Committee[0] {
			key = k
		}
	}
	if key == nil {
		t.Fatal("the committee runner is no genesis runner")
	}
	g := hn.nw.Homes[0].Genesis
	rv, err := chain.SignTx(key, uint64(g.ChainID), chain.TxReveal, 1, spec.ID(), chain.RevealPayload(cip11.Hash{9}, cip11.Hash{8}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := proposer.CheckTx(context.Background(), &abci.CheckTxRequest{Tx: rv.Bytes(), Type: abci.CHECK_TX_TYPE_CHECK}); err != nil || res.Code != CodeOK {
		t.Fatalf("CheckTx of the reveal: %v %v", res, err)
	}
	const h = 4
	valid := hn.prepare(t, 0, h, nil) // the proposer's core carries the reveal
	p, err := checker.Verify(h, valid)
	if err != nil {
		t.Fatalf("the proposal with the result and its reveal is rejected: %v", err)
	}
	kinds := 0
	for _, tx := range p.Block.Txs {
		if tx.ResultSubmit != nil || tx.Verified != nil {
			kinds++
		}
	}
	if kinds != 2 || len(valid) != 3 || !bytes.Equal(valid[2], rv.Bytes()) {
		t.Fatalf("proposal: %d result transactions in the body, %d transactions: want result_submit, verified and the reveal", kinds, len(valid))
	}
	if _, err := checker.Verify(h, valid[:2]); !errors.Is(err, chain.ErrUnsigned) {
		t.Fatalf("the result without its reveal: %v, want chain.ErrUnsigned", err)
	}
}
