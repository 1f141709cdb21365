package node

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/chainlog"
)

// nopEngine takes every broadcast (the test drives no consensus).
type nopEngine struct{ txs, jobs int }

func (e *nopEngine) BroadcastTx([]byte) error  { e.txs++; return nil }
func (e *nopEngine) BroadcastJob([]byte) error { e.jobs++; return nil }

func blockHash(t *testing.T, b *chainlog.Block) cip11.Hash {
	t.Helper()
	h, err := chain.BlockHash(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// oneValidatorNetwork is a network genesis whose set is the devnet's one
// validator (its BLS key then is both the group key and share 1).
func oneValidatorNetwork(t *testing.T) (*GeneratedGenesis, *Genesis) {
	t.Helper()
	d, err := GenerateGenesis(GenesisOptions{Seed: 5, Runners: 3, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	g := *d.Genesis
	g.Set = []GenesisValidator{g.Validator}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	return d, &g
}

// TestEngineValidator: under external consensus the validator produces no block
// itself, submissions go to the engine, the consensus steps drive the core,
// /status reports no block time, and Run returns the core's sticky failure
// (an operator's process stops instead of idling behind a halted engine).
func TestEngineValidator(t *testing.T) {
	d, g := oneValidatorNetwork(t)
	e := &nopEngine{}
	if _, err := NewValidator(ValidatorConfig{Genesis: g, Keys: d.Validator}); !errors.Is(err, ErrNilConfig) {
		t.Fatalf("a network genesis without a Broadcaster: %v, want ErrNilConfig", err)
	}
	v, err := NewValidator(ValidatorConfig{Genesis: g, Keys: d.Validator, Broadcaster: e, BlockTime: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	time.Sleep(50 * time.Millisecond)
	if h := v.Height(); h != 0 {
		t.Fatalf("Run under external consensus produced blocks: height %d", h)
	}
	if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{1}, Kind: 1, Runners: 1, TimeoutBlocks: 5}); err != nil || e.jobs != 1 {
		t.Fatalf("SubmitJob under a Broadcaster: %v, engine saw %d jobs", err, e.jobs)
	}
	solo := &Solo{Key: d.Validator.Threshold, Namespace: g.Namespace}
	solo.Schedule.ViewsPerEpoch, solo.Schedule.FirstView, solo.Schedule.LastKnownEpoch = uint64(g.Schedule.ViewsPerEpoch), 1, 99
	for h := uint64(1); h <= 3; h++ {
		cs, err := solo.Next(h, v.LastBlock())
		if err != nil {
			t.Fatal(err)
		}
		p, err := v.ProposeBlock(cs, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// the engine decides the block as its transactions: decoded, it is
		// a new *Block with the proposal's hash (its execution is reused)
		txs, err := blocklayout.EncodeProposal(p.Block, p.Carry, p.Extra, 0)
		if err != nil {
			t.Fatal(err)
		}
		dp, err := blocklayout.DecodeProposal(txs, h, uint64(g.ChainID))
		if err != nil {
			t.Fatal(err)
		}
		if h1, h2 := blockHash(t, p.Block), blockHash(t, dp.Block); h1 != h2 {
			t.Fatalf("block %d: the decoded proposal hashes to %x, the proposal to %x", h, h2, h1)
		}
		fb, err := v.FinalizeBlock(dp.Block, &chain.Carried{Txs: dp.Txs})
		if err != nil || fb.Out.StateDigest == (cip11.Hash{}) {
			t.Fatalf("FinalizeBlock %d: %v", h, err)
		}
		if retain, err := v.CommitBlock(); err != nil || retain != 0 {
			t.Fatalf("CommitBlock %d: %v, retain height %d (the default policy keeps everything)", h, err, retain)
		}
	}
	if v.Height() != 3 || v.Status().BlockTimeMillis != 0 {
		t.Fatalf("height %d, block_time_ms %d", v.Height(), v.Status().BlockTimeMillis)
	}
	if err := v.CheckBlock(&chainlog.Block{Height: 9}, nil); !errors.Is(err, chain.ErrOutOfOrder) {
		t.Fatalf("CheckBlock of a block not next: %v", err)
	}
	fail := fmt.Errorf("%w: injected", chain.ErrFailed)
	v.setFailed(fail)
	select {
	case err := <-done:
		if !errors.Is(err, chain.ErrFailed) {
			t.Fatalf("Run returned %v, want the core's failure", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the core failed")
	}
	cancel()
}

// TestEngineDropsUncommittedTail: under an engine, a block the block log
// holds and the state store did not commit (a crash after FinalizeBlock,
// before Commit) is cut off the log at start, not re-executed: the
// validator reports the committed height, so CometBFT's handshake replays
// the block to it (re-executed here, Info would claim a height whose
// FinalizeBlock responses CometBFT may never have saved: "expected last
// ABCI responses at height h, but none are found"). The engine's replay
// of the same block then executes and commits it.
func TestEngineDropsUncommittedTail(t *testing.T) {
	d, g := oneValidatorNetwork(t)
	dir := t.TempDir()
	solo := &Solo{Key: d.Validator.Threshold, Namespace: g.Namespace}
	solo.Schedule.ViewsPerEpoch, solo.Schedule.FirstView, solo.Schedule.LastKnownEpoch = uint64(g.Schedule.ViewsPerEpoch), 1, 99
	start := func() (*Validator, func()) {
		v, err := NewValidator(ValidatorConfig{Genesis: g, Keys: d.Validator, Broadcaster: &nopEngine{}, DataDir: dir, BlockTime: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- v.Run(ctx) }()
		return v, func() { cancel(); <-done; v.Close() }
	}
	decided := func(v *Validator, h uint64) *chainlog.Block {
		cs, err := solo.Next(h, v.LastBlock())
		if err != nil {
			t.Fatal(err)
		}
		p, err := v.ProposeBlock(cs, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p.Block
	}
	v, stop := start()
	for h := uint64(1); h <= 3; h++ {
		if _, err := v.FinalizeBlock(decided(v, h), &chain.Carried{}); err != nil {
			t.Fatal(err)
		}
		if _, err := v.CommitBlock(); err != nil {
			t.Fatal(err)
		}
	}
	b4 := decided(v, 4)
	if _, err := v.FinalizeBlock(b4, &chain.Carried{}); err != nil { // appended to the block log
		t.Fatal(err)
	}
	stop() // "crash" before Commit
	v, stop = start()
	defer stop()
	if h := v.Height(); h != 3 {
		t.Fatalf("restarted at height %d, want the committed 3", h)
	}
	if _, err := v.FinalizeBlock(b4, &chain.Carried{}); err != nil {
		t.Fatalf("the engine's replay of block 4: %v", err)
	}
	if _, err := v.CommitBlock(); err != nil || v.Height() != 4 {
		t.Fatalf("commit of the replayed block 4: %v, height %d", err, v.Height())
	}
}
