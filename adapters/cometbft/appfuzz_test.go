package cometbft

import (
	"bytes"
	"context"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/wire"
)

// Operations of FuzzAppBoundary (op % fuzzOps).
const (
	fuzzProposal = iota
	fuzzExtension
	fuzzCheckTx
	fuzzQuery
	fuzzSnapshot
	fuzzOps
)

// FuzzAppBoundary drives the ABCI calls through which a Byzantine peer or
// a stranger reaches a validator's App with bytes of its choosing: a
// proposal's transactions (ProcessProposal, §7.2, §9.2, D31, D32), a vote
// extension (VerifyVoteExtension, D31), a mempool transaction (CheckTx), an
// RPC query (Query), a snapshot offer and a chunk (OfferSnapshot,
// ApplySnapshotChunk). On any input the App never panics and never
// returns a Go error (CometBFT halts the node on one): it answers with a
// verdict. Two validators in the same state give the same verdict on the
// same proposal, extension and transaction (a split verdict is a fork or
// a stalled round), and an extension is accepted only if it is the
// signer's own partial of the height's round (no second encoding of it).
//
// State: a 4-validator network decided by hand to height 2 (validators 0,
// 1 and 2 as bare Apps, validator 0 proposing), and a fourth App that
// holds no block (the only one a snapshot offer reaches). Seeds, built
// here since the chain's keys and genesis are generated: height 3's valid
// proposal (header, body, a job spec), each validator's valid extension, a
// valid spec and heartbeat, a p2p filter query.
func FuzzAppBoundary(f *testing.F) {
	hn := newHandNet(f, 4, 8, 4)
	fresh := hn.apps[3]
	hn.apps = hn.apps[:3]
	for h := uint64(1); h <= 2; h++ {
		hn.decide(f, 0, h, hn.prepare(f, 0, h, nil))
	}
	const h = 3
	ctx := context.Background()
	spec := &node.JobSpec{Submitter: cip11.Address{7}, Kind: 1, Runners: 1, TimeoutBlocks: 20, Nonce: 1}
	if res, err := hn.apps[0].CheckTx(ctx, &abci.CheckTxRequest{Tx: spec.Encode(), Type: abci.CHECK_TX_TYPE_CHECK}); err != nil || res.Code != CodeOK {
		f.Fatalf("CheckTx: %v %v", res, err)
	}
	valid := hn.prepare(f, 0, h, [][]byte{spec.Encode()})
	if len(valid) != 3 {
		f.Fatalf("height 3's proposal: %d transactions, want header, body, the spec", len(valid))
	}
	partials := make([][]byte, 4)
	for i := range partials {
		p := hn.partial(f, i, h)
		partials[i] = p.Signature[:]
	}
	k, err := wire.NewRunnerKey(devkeys.Runner(1, 2))
	if err != nil {
		f.Fatal(err)
	}
	hb, err := chain.SignTx(k, uint64(hn.nw.Homes[0].Genesis.ChainID), chain.TxHeartbeat, h-1, cip11.Hash{}, nil)
	if err != nil {
		f.Fatal(err)
	}

	f.Add(byte(fuzzProposal), valid[0], valid[1], valid[2])
	f.Add(byte(fuzzProposal), valid[0], valid[1], []byte(nil))
	f.Add(byte(fuzzProposal), valid[1], valid[0], valid[2])
	for i := range partials {
		f.Add(byte(fuzzExtension|i<<4), []byte(nil), partials[i], []byte(nil))
	}
	f.Add(byte(fuzzExtension|8), hn.addrs[1], partials[1], []byte(nil))
	f.Add(byte(fuzzCheckTx), spec.Encode(), []byte(nil), []byte(nil))
	f.Add(byte(fuzzCheckTx), hb.Bytes(), []byte(nil), []byte(nil))
	f.Add(byte(fuzzQuery), []byte("/p2p/filter/id/0123"), []byte{1}, []byte(nil))
	f.Add(byte(fuzzSnapshot), []byte(`{"format":1}`), valid[1], valid[0])

	checkers := hn.apps[1:3] // in the same state; validator 0 proposed
	for _, app := range checkers {
		if res, err := app.ProcessProposal(ctx, &abci.ProcessProposalRequest{Height: h, Txs: valid, ProposerAddress: hn.addrs[0]}); err != nil || res.Status != abci.PROCESS_PROPOSAL_STATUS_ACCEPT {
			f.Fatalf("height 3's valid proposal: %v, %v", res, err)
		}
	}
	f.Fuzz(func(t *testing.T, op byte, a, b, c []byte) {
		switch op % fuzzOps {
		case fuzzProposal:
			txs := [][]byte{a, b}
			if len(c) > 0 {
				txs = append(txs, c)
			}
			v := oneVerdict(t, "proposal", checkers, func(app *App) (abci.ProcessProposalStatus, error) {
				res, err := app.ProcessProposal(ctx, &abci.ProcessProposalRequest{Height: h, Txs: txs, ProposerAddress: hn.addrs[0]})
				return res.GetStatus(), err
			})
			if v != abci.PROCESS_PROPOSAL_STATUS_ACCEPT && v != abci.PROCESS_PROPOSAL_STATUS_REJECT {
				t.Fatalf("proposal verdict %v (CometBFT takes only ACCEPT or REJECT)", v)
			}
		case fuzzExtension:
			i := int(op>>4) % 4
			addr := hn.addrs[i]
			if op&8 != 0 {
				addr = a
			}
			v := oneVerdict(t, "extension", checkers, func(app *App) (abci.VerifyVoteExtensionStatus, error) {
				res, err := app.VerifyVoteExtension(ctx, &abci.VerifyVoteExtensionRequest{Height: h, ValidatorAddress: addr, VoteExtension: b})
				return res.GetStatus(), err
			})
			own := false // the extension is the named signer's own partial
			for j := range partials {
				own = own || bytes.Equal(addr, hn.addrs[j]) && bytes.Equal(b, partials[j])
			}
			if want := map[bool]abci.VerifyVoteExtensionStatus{true: abci.VERIFY_VOTE_EXTENSION_STATUS_ACCEPT,
				false: abci.VERIFY_VOTE_EXTENSION_STATUS_REJECT}[own]; v != want {
				t.Fatalf("extension %x of %x: %v, want %v (the signer's own partial: %v)", b, addr, v, want, own)
			}
		case fuzzCheckTx:
			oneVerdict(t, "transaction", checkers, func(app *App) (uint32, error) {
				res, err := app.CheckTx(ctx, &abci.CheckTxRequest{Tx: a, Type: abci.CHECK_TX_TYPE_CHECK})
				return res.GetCode(), err
			})
		case fuzzQuery:
			if res, err := checkers[0].Query(ctx, &abci.QueryRequest{Path: string(a), Data: b}); err != nil || res == nil {
				t.Fatalf("Query: %v, %v", res, err)
			}
		case fuzzSnapshot:
			var chunks uint32
			if len(a) > 0 {
				chunks = uint32(a[0] % 4)
			}
			offer, err := fresh.OfferSnapshot(ctx, &abci.OfferSnapshotRequest{
				Snapshot: &abci.Snapshot{Height: uint64(op >> 3), Format: uint32(op>>6) + node.SnapshotFormat - 1, Chunks: chunks, Hash: c, Metadata: a},
				AppHash:  c})
			if err != nil || offer == nil {
				t.Fatalf("OfferSnapshot: %v, %v", offer, err)
			}
			res, err := fresh.ApplySnapshotChunk(ctx, &abci.ApplySnapshotChunkRequest{Index: 0, Chunk: b, Sender: "fuzz"})
			if err != nil || res == nil {
				t.Fatalf("ApplySnapshotChunk: %v, %v", res, err)
			}
			if res.Result == abci.APPLY_SNAPSHOT_CHUNK_RESULT_ACCEPT && fresh.v.Height() != 0 {
				t.Fatalf("a fuzzed snapshot installed: height %d", fresh.v.Height())
			}
		}
	})
}

// oneVerdict asks every app in one state the same question: a Go error
// (CometBFT halts on one) or two different answers fail t.
func oneVerdict[T comparable](t *testing.T, what string, apps []*App, ask func(*App) (T, error)) T {
	t.Helper()
	var first T
	for i, app := range apps {
		v, err := ask(app)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if i == 0 {
			first = v
		} else if v != first {
			t.Fatalf("split verdict on one %s: %v and %v", what, first, v)
		}
	}
	return first
}
