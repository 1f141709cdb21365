package cometbft

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/blockheader"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// readBlockLog reads a validator's whole block log (node/blocks.jsonl).
func readBlockLog(t *testing.T, dir string) []chainlog.Block {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "blocks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := chainlog.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var bs []chainlog.Block
	for {
		b, err := r.Next()
		if errors.Is(err, io.EOF) {
			return bs
		}
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		bs = append(bs, b)
	}
}

// TestPendingSeedConsumedOnNetwork: an M = 2 job submitted to a 4-validator
// CometBFT network stays pending from its submit block S until a block
// commits the threshold seed of r_seed = advance_round(r_submit, K) in
// ConsumedSeedsV1 and seats its committee from it (§9.2; D30: one epoch
// whose views are the heights, so r_seed = (0, S + K); D31: the seed is
// the group signature recovered from the vote extensions).
func TestPendingSeedConsumedOnNetwork(t *testing.T) {
	nw, nodes, _ := startNet(t, 4, 8)
	waitHeight(t, nodes, 2, 60*time.Second)
	spec := &node.JobSpec{Submitter: cip11.Address{0xc1}, Kind: 1, Runners: 2, TimeoutBlocks: 60, Nonce: 42}
	id, err := nodes[1].V.SubmitJob(spec)
	if err != nil {
		t.Fatal(err)
	}
	if id != spec.ID() {
		t.Fatalf("job id %x, want %x", id, spec.ID())
	}
	g := nw.Homes[0].Genesis
	k := g.P().SelectionSeedDelayViews
	if k != 3 {
		t.Fatalf("SELECTION_SEED_DELAY_VIEWS %d; the devnet runs the §9.2 launch value 3", k)
	}
	// The submit is included within a few blocks; the seed of S+K is known
	// one block after S+K. Wait well past that.
	h0 := nodes[0].V.Height()
	waitHeight(t, nodes, h0+uint64(k)+12, 90*time.Second)

	// The consumed seeds as CometBFT carried them: the header transaction
	// of each validator's committed blocks.
	headerSeeds := func(i int, h uint64) seed.ConsumedSeedsV1 {
		blk, _ := nodes[i].cmt.BlockStore().LoadBlock(int64(h))
		if blk == nil || len(blk.Txs) == 0 {
			t.Fatalf("validator %d: CometBFT block %d missing or empty", i, h)
		}
		hd, err := blockheader.Decode(blk.Txs[0])
		if err != nil {
			t.Fatalf("validator %d: block %d header: %v", i, h, err)
		}
		return hd.ConsumedSeeds
	}
	top := h0 + uint64(k) + 12
	var fromHeaders []seed.ConsumedSeedsV1
	for i := range nodes {
		var cs seed.ConsumedSeedsV1
		for h := uint64(1); h <= top; h++ {
			if s := headerSeeds(i, h); len(s) > 0 {
				if cs != nil {
					t.Fatalf("validator %d: two CometBFT blocks carry consumed seeds (block %d too)", i, h)
				}
				cs = s
			}
		}
		fromHeaders = append(fromHeaders, cs)
	}
	for _, nd := range nodes {
		if err := nd.Close(); err != nil {
			t.Fatal(err)
		}
	}

	groupKey := g.Validator.ThresholdPubKey[:]
	gs := derive("group", nw.Opts.Seed, 0) // the devnet dealer's group secret
	group := seed.DeriveSecretKey(gs[:])
	var first *chainlog.Block
	for i, nd := range nodes {
		bs := readBlockLog(t, nd.V.Dir())
		var submit, consumed *chainlog.Block
		for j := range bs {
			b := &bs[j]
			for _, tx := range b.Txs {
				if tx.Submit != nil && tx.Submit.JobID == id {
					if submit != nil {
						t.Fatalf("validator %d: job submitted in blocks %d and %d", i, submit.Height, b.Height)
					}
					submit = b
				}
			}
			cs, err := seed.DecodeConsumedSeedsV1(b.ConsumedSeeds)
			if err != nil {
				t.Fatalf("validator %d: block %d consumed_seeds: %v", i, b.Height, err)
			}
			if len(cs) > 0 {
				if consumed != nil {
					t.Fatalf("validator %d: consumed seeds in blocks %d and %d, one M>1 job", i, consumed.Height, b.Height)
				}
				consumed = b
			}
		}
		if submit == nil || consumed == nil {
			t.Fatalf("validator %d: %d blocks; submit block %v, consuming block %v", i, len(bs), submit != nil, consumed != nil)
		}
		S := uint64(submit.Height)
		if uint64(submit.Round.View) != S || submit.Round.Epoch != 0 {
			t.Fatalf("validator %d: submit block %d in round %v (D30: (0, height))", i, S, submit.Round)
		}
		cs, _ := seed.DecodeConsumedSeedsV1(consumed.ConsumedSeeds)
		if len(cs) != 1 {
			t.Fatalf("validator %d: block %d consumes %d seeds, want 1", i, consumed.Height, len(cs))
		}
		want := seed.Round{Epoch: 0, View: S + k} // advance_round(r_submit, K), one epoch of views = heights
		e := cs[0]
		if e.Round != want {
			t.Fatalf("validator %d: block %d consumes the seed of round %v; r_submit (0, %d), K %d: want %v", i, consumed.Height, e.Round, S, k, want)
		}
		if uint64(consumed.Height) <= want.View {
			t.Fatalf("validator %d: seed of %v consumed at height %d, before its round ended", i, want, consumed.Height)
		}
		if err := seed.VerifySeed(groupKey, g.Namespace, e.Round, e.Signature[:]); err != nil {
			t.Fatalf("validator %d: consumed seed does not verify under the group key: %v", i, err)
		}
		direct, err := seed.SignSeed(group, g.Namespace, e.Round)
		if err != nil {
			t.Fatal(err)
		}
		if e.Signature != direct {
			t.Fatalf("validator %d: consumed seed %x is not the group signature %x", i, e.Signature, direct)
		}
		// The same seed is the parent beacon of block S+K+1.
		if pb := bs[want.View].ParentBeacon; pb == nil || uint64(pb.View) != want.View || seed.Signature(pb.Signature) != e.Signature {
			t.Fatalf("validator %d: block %d's parent beacon %+v is not the consumed seed", i, want.View+1, pb)
		}
		if !reflect.DeepEqual(fromHeaders[i], cs) {
			t.Fatalf("validator %d: the CometBFT header carried %v, the block log %v", i, fromHeaders[i], cs)
		}
		var seated *chainlog.Assignment
		for j := range consumed.Out.Assignments {
			if a := &consumed.Out.Assignments[j]; a.JobID == id {
				seated = a
			}
		}
		if seated == nil {
			t.Fatalf("validator %d: block %d assigns %d committees, none for the job", i, consumed.Height, len(consumed.Out.Assignments))
		}
		if len(seated.Committee) != 2 || seated.Committee[0] == seated.Committee[1] {
			t.Fatalf("validator %d: committee %v, want 2 distinct runners", i, seated.Committee)
		}
		if seated.Mode != uint8(seed.ModeDelayed) || uint64(seated.SubmittedAt) != S || seated.AssignmentHeight != consumed.Height {
			t.Fatalf("validator %d: assignment %+v: want mode 0x01, submitted_at %d, assignment_height %d", i, seated, S, consumed.Height)
		}
		if len(consumed.Out.PendingConsumed) != 1 || consumed.Out.PendingConsumed[0] != id {
			t.Fatalf("validator %d: pending_consumed %v, want the job", i, consumed.Out.PendingConsumed)
		}
		if first == nil {
			first = consumed
			t.Logf("job submitted at %d, seed of %v consumed at %d, committee %v", S, want, consumed.Height, seated.Committee)
		} else if !reflect.DeepEqual(first.Out, consumed.Out) || first.Height != consumed.Height {
			t.Fatalf("validator %d: consuming block %d differs from validator 0's %d", i, consumed.Height, first.Height)
		}
	}
}
