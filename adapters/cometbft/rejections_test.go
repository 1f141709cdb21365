package cometbft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
)

// TestRejectReasons pins the reason of each sentinel (the first of the
// table the error wraps) and RejectOther for anything else.
func TestRejectReasons(t *testing.T) {
	wrap := func(errs ...error) error {
		var err error = fmt.Errorf("context")
		for _, e := range errs {
			err = fmt.Errorf("%w: %w", e, err)
		}
		return err
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrap(blocklayout.ErrBeaconInvalid, seed.ErrSeedSignatureInvalid), RejectBeacon},
		{blockheader.ErrBeaconRound, RejectBeacon},
		{wrap(chain.ErrUnsigned), RejectUnsigned},
		{wrap(blocklayout.ErrCertificateUnsigned), RejectCertificate},
		{blocklayout.ErrSpecMissing, RejectSpec},
		{wrap(blocklayout.ErrBadTx), RejectTx},
		{blockheader.ErrSeedRound, RejectHeader},
		{blocklayout.ErrHeaderMissing, RejectLayout},
		{wrap(chain.ErrInvalidBlock, errors.New("executor")), RejectExecution},
		{errors.New("anything else"), RejectOther},
	} {
		if got := ProposalRejectReason(c.err); got != c.want {
			t.Errorf("proposal %v: %q, want %q", c.err, got, c.want)
		}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{wrap(blocklayout.ErrExtension, seed.ErrIndexOutOfRange), RejectSigner},
		{wrap(blocklayout.ErrExtension, seed.ErrSeedSignatureLength), RejectLength},
		{wrap(blocklayout.ErrExtension, seed.ErrSeedSignatureInvalid), RejectSignature},
		{wrap(blocklayout.ErrExtension, seed.ErrSignatureEncoding), RejectEncoding},
		{errors.New("anything else"), RejectOther},
	} {
		if got := ExtensionRejectReason(c.err); got != c.want {
			t.Errorf("extension %v: %q, want %q", c.err, got, c.want)
		}
	}
}

// TestRejectionsCounted: ProcessProposal and VerifyVoteExtension count
// what they refuse by reason (App.Rejections), and nothing they accept.
func TestRejectionsCounted(t *testing.T) {
	hn := newHandNet(t, 4, 8, 2)
	checker := hn.apps[1]
	for h := uint64(1); h <= 2; h++ {
		hn.decide(t, 0, h, hn.prepare(t, 0, h, nil))
	}
	zero := checker.Rejections()
	for _, r := range ProposalReasons {
		if zero.Proposals[r] != 0 {
			t.Fatalf("after two accepted blocks: %v", zero)
		}
	}
	const h = 3
	valid := hn.prepare(t, 0, h, nil)
	ctx := context.Background()
	process := func(txs [][]byte) abci.ProcessProposalStatus {
		res, err := checker.ProcessProposal(ctx, &abci.ProcessProposalRequest{Height: h, Txs: txs, ProposerAddress: hn.addrs[0]})
		if err != nil {
			t.Fatal(err)
		}
		return res.Status
	}
	forged := withHeader(t, valid, func(x *blockheader.Header) { x.ParentBeacon.Signature = hn.groupSeed(t, h-2) })
	for _, txs := range [][][]byte{forged, forged, {valid[1]}} {
		if process(txs) != abci.PROCESS_PROPOSAL_STATUS_REJECT {
			t.Fatal("a bad proposal accepted")
		}
	}
	if process(valid) != abci.PROCESS_PROPOSAL_STATUS_ACCEPT {
		t.Fatal("the valid proposal rejected")
	}
	bad := hn.partial(t, 1, h+1) // another round's partial
	for _, ext := range [][]byte{bad.Signature[:], bad.Signature[:40], bytes.Repeat([]byte{0xff}, 48)} {
		res, err := checker.VerifyVoteExtension(ctx, &abci.VerifyVoteExtensionRequest{Height: h, ValidatorAddress: hn.addrs[1], VoteExtension: ext})
		if err != nil || res.Status != abci.VERIFY_VOTE_EXTENSION_STATUS_REJECT {
			t.Fatalf("extension %x: %v %v", ext, res, err)
		}
	}
	good := hn.partial(t, 1, h)
	if res, _ := checker.VerifyVoteExtension(ctx, &abci.VerifyVoteExtensionRequest{Height: h, ValidatorAddress: hn.addrs[1], VoteExtension: good.Signature[:]}); res.Status != abci.VERIFY_VOTE_EXTENSION_STATUS_ACCEPT {
		t.Fatal("the valid extension rejected")
	}
	got := checker.Rejections()
	wantP := map[string]uint64{RejectBeacon: 2, RejectLayout: 1}
	wantE := map[string]uint64{RejectSignature: 1, RejectLength: 1, RejectEncoding: 1}
	for _, r := range ProposalReasons {
		if got.Proposals[r] != wantP[r] {
			t.Errorf("proposals rejected for %q: %d, want %d", r, got.Proposals[r], wantP[r])
		}
	}
	for _, r := range ExtensionReasons {
		if got.Extensions[r] != wantE[r] {
			t.Errorf("extensions rejected for %q: %d, want %d", r, got.Extensions[r], wantE[r])
		}
	}
}

// TestMisbehaviourHook: with no misbehaviour set the App proposes and
// extends as ever; a proposal a misbehaviour alters is the proposer's own
// (accepted by it) and, decided, executes from its transactions to the
// AppHash another validator computes; the hook cleared, the App is honest
// again.
func TestMisbehaviourHook(t *testing.T) {
	hn := newHandNet(t, 4, 8, 2)
	a, other := hn.apps[0], hn.apps[1]
	ctx := context.Background()
	h := uint64(1)
	for ; h <= 2; h++ {
		hn.decide(t, 0, h, hn.prepare(t, 0, h, nil))
	}
	honest := hn.partial(t, 0, h)
	ev, err := a.ExtendVote(ctx, &abci.ExtendVoteRequest{Height: int64(h)})
	if err != nil || !bytes.Equal(ev.VoteExtension, honest.Signature[:]) {
		t.Fatalf("ExtendVote with no misbehaviour: %x, %v", ev.VoteExtension, err)
	}
	built := hn.prepare(t, 0, h, nil)
	all, err := presence.NewSet(8, seqTo(8))
	if err != nil {
		t.Fatal(err)
	}
	a.misbehave(&misbehavior{
		extension: func(uint64, []byte) []byte { return []byte("garbage") },
		proposal: func(_ uint64, txs [][]byte) [][]byte {
			return withHeader(t, txs, func(x *blockheader.Header) { x.Presence = presence.Encode(all) })
		},
	})
	if ev, _ := a.ExtendVote(ctx, &abci.ExtendVoteRequest{Height: int64(h)}); string(ev.VoteExtension) != "garbage" {
		t.Fatalf("ExtendVote with the misbehaviour: %x", ev.VoteExtension)
	}
	txs := hn.prepare(t, 0, h, nil)
	if bytes.Equal(txs[0], built[0]) {
		t.Fatal("the proposal hook changed nothing")
	}
	own, err := a.ProcessProposal(ctx, &abci.ProcessProposalRequest{Height: int64(h), Txs: txs})
	if err != nil || own.Status != abci.PROCESS_PROPOSAL_STATUS_ACCEPT {
		t.Fatalf("the proposer's own ProcessProposal of its altered proposal: %v %v", own, err)
	}
	hn.decide(t, 0, h, txs) // the other validator accepts it; both execute it to one AppHash
	if b := a.v.LastBlock(); b == nil || b.Presence == nil || !bytes.Equal(*b.Presence, presence.Encode(all)) {
		t.Fatal("the proposer did not execute the altered block")
	}
	if other.v.LastBlock().Out.StateDigest != a.v.LastBlock().Out.StateDigest {
		t.Fatal("AppHashes differ")
	}
	a.misbehave(nil)
	h++
	honest = hn.partial(t, 0, h)
	if ev, _ := a.ExtendVote(ctx, &abci.ExtendVoteRequest{Height: int64(h)}); !bytes.Equal(ev.VoteExtension, honest.Signature[:]) {
		t.Fatalf("ExtendVote after the misbehaviour is cleared: %x", ev.VoteExtension)
	}
	hn.decide(t, 0, h, hn.prepare(t, 0, h, nil))
}
