package blockexec_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/synth"
)

// chain returns a small generated chain log's header and blocks.
func chain(t *testing.T) (chainlog.Header, []chainlog.Block) {
	t.Helper()
	h, blocks := generate(t, synth.GenConfig{Seed: 6, Runners: 50, Blocks: 25})
	if len(blocks) != 25 {
		t.Fatalf("%d blocks", len(blocks))
	}
	return h, blocks
}

// generate returns the header and blocks of the synthetic chain cfg.
func generate(t *testing.T, cfg synth.GenConfig) (chainlog.Header, []chainlog.Block) {
	t.Helper()
	var buf bytes.Buffer
	if err := synth.Generate(cfg, &buf, nil); err != nil {
		t.Fatal(err)
	}
	cr, err := chainlog.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []chainlog.Block
	for {
		b, err := cr.Next()
		if err != nil {
			break
		}
		blocks = append(blocks, b)
	}
	return cr.Header(), blocks
}

// TestExecuteCommitDiscard: Execute leaves the block open; Discard returns
// the state digest and last committed height to the previous block's, and
// executing the same block again then reproduces the log's outputs;
// Commit outside an open block is store.ErrNoBatch; Step is Execute then
// Commit (§9.2 execution over the store's block lifecycle).
func TestExecuteCommitDiscard(t *testing.T) {
	h, blocks := chain(t)
	x, err := blockexec.New(h, blockexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.Commit(); !errors.Is(err, store.ErrNoBatch) {
		t.Fatalf("Commit without Execute: %v, want store.ErrNoBatch", err)
	}
	for i := range blocks[:10] {
		if _, err := x.Step(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	before, err := x.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if before != blocks[9].Out.StateDigest {
		t.Fatalf("digest after Step ×10 %s, log %s", before, blocks[9].Out.StateDigest)
	}
	b := &blocks[10]
	out, err := x.Execute(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := blockexec.DiffOutput(11, &b.Out, &out); d != nil {
		t.Fatalf("Execute: %v", d)
	}
	if last, _ := x.LastCommitted(); last != 10 {
		t.Fatalf("last committed %d with block 11 open, want 10", last)
	}
	x.Discard()
	x.Discard() // a no-op without an open block
	if after, err := x.Digest(); err != nil || after != before {
		t.Fatalf("digest after Discard %s (%v), want %s", after, err, before)
	}
	if err := x.Commit(); !errors.Is(err, store.ErrNoBatch) {
		t.Fatalf("Commit after Discard: %v, want store.ErrNoBatch", err)
	}
	out, err = x.Execute(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := blockexec.DiffOutput(11, &b.Out, &out); d != nil {
		t.Fatalf("Execute after Discard: %v", d)
	}
	if err := x.Commit(); err != nil {
		t.Fatal(err)
	}
	if last, ok := x.LastCommitted(); !ok || last != 11 {
		t.Fatalf("last committed %d %v, want 11", last, ok)
	}
}

// TestDiscardThenOtherBlock: after a discarded block, another block at the
// same height registering other runners yields the state digest a fresh
// executor computes for it: the discarded block's registrations leave the
// ACTIVE_RUNNERS_KEY list (§7.2) and its cached hash.
func TestDiscardThenOtherBlock(t *testing.T) {
	h, blocks := chain(t)
	b := &blocks[10]
	alt := *b
	alt.Registry = append([]chainlog.RegistryOp(nil), b.Registry...)
	changed := 0
	for i := range alt.Registry {
		if alt.Registry[i].Op == chainlog.OpRegister {
			alt.Registry[i].Address[0] ^= 0xff
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("block 11 registers no runner")
	}
	run := func(discardFirst bool) cip11.Hash {
		x, err := blockexec.New(h, blockexec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		for i := range blocks[:10] {
			if _, err := x.Step(&blocks[i]); err != nil {
				t.Fatal(err)
			}
		}
		if discardFirst {
			if _, err := x.Execute(b); err != nil {
				t.Fatal(err)
			}
			x.Discard()
		}
		out, err := x.Step(&alt)
		if err != nil {
			t.Fatal(err)
		}
		return out.StateDigest
	}
	if fresh, after := run(false), run(true); after != fresh {
		t.Fatalf("digest after a discarded block %s, fresh executor %s", after, fresh)
	}
}

// TestDiffOutputNamesField: DiffOutput is nil for equal outputs and names
// the block and the first differing field otherwise, wrapping
// ErrDivergence.
func TestDiffOutputNamesField(t *testing.T) {
	_, blocks := chain(t)
	var b *chainlog.Block
	for i := range blocks {
		if len(blocks[i].Out.Assignments) > 0 {
			b = &blocks[i]
			break
		}
	}
	if b == nil {
		t.Fatal("no block with an assignment")
	}
	got := b.Out
	if d := blockexec.DiffOutput(7, &b.Out, &got); d != nil {
		t.Fatalf("equal outputs: %v", d)
	}
	got.Assignments = append([]chainlog.Assignment(nil), b.Out.Assignments...)
	got.Assignments[0].DeadlineBlock++
	d := blockexec.DiffOutput(7, &b.Out, &got)
	if d == nil || d.Height != 7 || d.Field != "assignments[0].deadline_block" || !errors.Is(d, blockexec.ErrDivergence) {
		t.Fatalf("got %+v, want a divergence at block 7 in assignments[0].deadline_block", d)
	}
}

// TestStoreMismatch: a store whose reputation configuration is not the
// header's is ErrStoreMismatch (at New for a store with committed blocks,
// at the first Execute for an empty one).
func TestStoreMismatch(t *testing.T) {
	h, blocks := chain(t)
	other := state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer) + 1, WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
	x, err := blockexec.New(h, blockexec.Options{OpenStore: func(chainlog.Header) (store.Store, error) {
		return store.NewMemConfig(other), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.Execute(&blocks[0]); !errors.Is(err, blockexec.ErrStoreMismatch) {
		t.Fatalf("Execute over another reputation configuration: %v, want ErrStoreMismatch", err)
	}
	if err := x.Commit(); !errors.Is(err, store.ErrNoBatch) {
		t.Fatalf("a failed Execute left a block open: %v", err)
	}
}
