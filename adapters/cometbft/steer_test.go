package cometbft

import (
	"context"
	"slices"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence"
)

// TestPresenceCannotSteerMultiRunner: on the network a proposer's
// PresenceInput moves M = 1 draws (present-first, §7.3) but never an
// M > 1 committee, whose membership is drawn over the whole floor-eligible
// set from the consumed threshold seed (§7.3 membership-steering bound,
// §9.2; issue 20 §1). The block that seats an M = 2 job is proposed twice,
// once with no runner present and once with a single runner present; a
// second validator checks both (App.Verify executes them) and the M = 2
// committee is the same, while an M = 1 job in the same block goes to the
// one present runner.
func TestPresenceCannotSteerMultiRunner(t *testing.T) {
	hn := newHandNet(t, 4, 8, 2)
	checker := hn.apps[1]
	submit := func(s *node.JobSpec) {
		for _, a := range hn.apps {
			if res, err := a.CheckTx(context.Background(), &abci.CheckTxRequest{Tx: s.Encode(), Type: abci.CHECK_TX_TYPE_CHECK}); err != nil || res.Code != CodeOK {
				t.Fatalf("CheckTx: %v %v", res, err)
			}
		}
	}
	h := uint64(1)
	for ; h <= 2; h++ {
		hn.decide(t, 0, h, hn.prepare(t, 0, h, nil))
	}
	multi := &node.JobSpec{Submitter: cip11.Address{7}, Kind: 1, Runners: 2, TimeoutBlocks: 30, Nonce: 1}
	submit(multi)
	hn.decide(t, 0, h, hn.prepare(t, 0, h, [][]byte{multi.Encode()})) // S = 3
	h++
	single := &node.JobSpec{Submitter: cip11.Address{8}, Kind: 1, Runners: 1, TimeoutBlocks: 30, Nonce: 2}
	for ; h < 12; h++ {
		var mem [][]byte
		if h == 3+3+1 { // the pending pass of S + K + 1 (K = 3): the M = 2 job is seated here
			submit(single)
			mem = [][]byte{single.Encode()}
		}
		txs := hn.prepare(t, 0, h, mem)
		p, err := checker.Verify(h, txs)
		if err != nil {
			t.Fatal(err)
		}
		if committee(p.Block, multi.ID()) == nil {
			hn.decide(t, 0, h, txs)
			continue
		}
		// This block seats the M = 2 job: propose it again with one runner present.
		one, err := presence.NewSet(8, []int{5})
		if err != nil {
			t.Fatal(err)
		}
		steered := withHeader(t, txs, func(x *blockheader.Header) { x.Presence = presence.Encode(one) })
		q, err := checker.Verify(h, steered)
		if err != nil {
			t.Fatalf("the proposal with one runner present is rejected: %v", err)
		}
		a, b := committee(p.Block, multi.ID()), committee(q.Block, multi.ID())
		if len(a) != 2 || !slices.Equal(a, b) {
			t.Fatalf("the M = 2 committee moved with presence: %v (none present), %v (one present)", a, b)
		}
		present := hn.nw.Homes[0].Genesis.Runners[5].Address
		if s := committee(q.Block, single.ID()); len(s) != 1 || s[0] != present {
			t.Fatalf("the M = 1 job with runner 5 alone present went to %v, want %s (present-first, §7.3)", s, present)
		}
		return
	}
	t.Fatal("no block seated the M = 2 job")
}

// committee is job id's committee in b's outputs (nil: not seated there).
func committee(b *chainlog.Block, id cip11.Hash) []cip11.Address {
	for _, a := range b.Out.Assignments {
		if a.JobID == id {
			return a.Committee
		}
	}
	return nil
}
