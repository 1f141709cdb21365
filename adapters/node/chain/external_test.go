package chain_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
)

// countingExec counts the executions of the executor it wraps.
type countingExec struct {
	chain.Executor
	n int
}

func (x *countingExec) Execute(b *chainlog.Block) (chainlog.Output, error) {
	x.n++
	return x.Executor.Execute(b)
}

// external is a core whose engine's mempool is the only one
// (Config.ExternalMempool), its executions counted.
func external(t *testing.T) (*world, *countingExec) {
	t.Helper()
	var x *countingExec
	w := newWorldWith(t, 3, func(c *chain.Config) {
		c.ExternalMempool = true
		x = &countingExec{Executor: c.Exec}
		c.Exec = x
	})
	return w, x
}

// proposeFrom builds the next block from the engine's transactions txs.
func (w *world) proposeFrom(txs ...[]byte) *chain.Proposal {
	w.t.Helper()
	cs, err := w.prod.Next(w.c.Height()+1, w.c.Last())
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := w.c.Propose(cs, nil, txs)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// copyBlock is b as another validator decodes it: a new *Block, no Out.
func copyBlock(t *testing.T, b *chainlog.Block) *chainlog.Block {
	t.Helper()
	in := *b
	in.Out = chainlog.Output{}
	enc, err := chainlog.EncodeBlock(&in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := chainlog.DecodeBlock(enc)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestCoreExternalMempool: with the engine's mempool the only one,
// admission journals and tracks a job but pools nothing (a proposal over
// no transactions submits nothing); a proposal over the engine's
// transactions submits the job and carries its spec; a core that never
// saw the job learns it from the decided block (journaled once, tracked,
// pushed with its spec) without admitting anything, and a spec the
// proposal cannot use any more is handed back as Extra.
func TestCoreExternalMempool(t *testing.T) {
	w, _ := external(t)
	peer, _ := external(t)
	spec := &chain.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 1, TimeoutBlocks: 10, Nonce: 1}
	id, err := w.c.SubmitJob(spec, w.now)
	if err != nil {
		t.Fatal(err)
	}
	if jv, ok := w.c.Job(id); !ok || jv.State != job.StateSubmitted || w.c.MempoolLen() != 0 || len(w.jrnl.Specs) != 1 {
		t.Fatalf("after admission: %+v %v, mempool %d, journal %d: want tracked as submitted, journaled, pooled nowhere", jv, ok, w.c.MempoolLen(), len(w.jrnl.Specs))
	}
	empty := w.proposeFrom()
	if len(empty.Block.Txs) != 0 {
		t.Fatalf("a proposal over no transactions submits %d", len(empty.Block.Txs))
	}
	for _, x := range []*world{w, peer} { // block 1 registers the genesis runners
		if _, err := x.c.Apply(copyBlock(t, empty.Block), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := x.c.Commit(x.now); err != nil {
			t.Fatal(err)
		}
	}
	p := w.proposeFrom(spec.Encode(), []byte("C11J not a spec"))
	if len(p.Block.Txs) != 1 || p.Block.Txs[0].Submit == nil || p.Block.Txs[0].Submit.JobID != id ||
		len(p.Carry) != 1 || string(p.Carry[0]) != string(spec.Encode()) || len(p.Extra) != 0 {
		t.Fatalf("proposal from the engine's transactions: txs %+v, carry %d, extra %d", p.Block.Txs, len(p.Carry), len(p.Extra))
	}
	b := p.Block
	if _, err := w.c.Apply(copyBlock(t, b), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Commit(w.now); err != nil {
		t.Fatal(err)
	}
	d := copyBlock(t, b)
	if err := peer.c.Check(d); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.c.Apply(copyBlock(t, b), &chain.Carried{Specs: [][]byte{spec.Encode()}, At: peer.now}); err != nil {
		t.Fatal(err)
	}
	res, err := peer.c.Commit(peer.now)
	if err != nil {
		t.Fatal(err)
	}
	if jv, ok := peer.c.Job(id); !ok || jv.State != job.StateAssigned || len(peer.jrnl.Specs) != 1 || peer.c.MempoolLen() != 0 {
		t.Fatalf("the peer after the block: %+v %v, journal %d, mempool %d", jv, ok, len(peer.jrnl.Specs), peer.c.MempoolLen())
	}
	if len(res.Pushes) != 1 || string(res.Pushes[0].JobSpec) != string(spec.Encode()) {
		t.Fatalf("the peer's pushes: %+v, want one with the learned spec (block out %+v)", res.Pushes, res.Block.Out.Assignments)
	}
	if p := w.proposeFrom(spec.Encode()); len(p.Block.Txs) != 0 || len(p.Extra) != 1 {
		t.Fatalf("a proposal over an included job's spec: txs %+v, extra %d: want none, the spec to drain", p.Block.Txs, len(p.Extra))
	}
	own := newWorld(t, 3, 0)
	cs, _ := own.prod.Next(1, nil)
	if _, err := own.c.Propose(cs, nil, [][]byte{spec.Encode()}); !errors.Is(err, chain.ErrBadRequest) {
		t.Fatalf("transactions handed to a core with its own pool: %v, want ErrBadRequest", err)
	}
}

// TestCoreExecutesOnce: the open execution is keyed by the block's hash,
// not its pointer: a decoded copy of the proposed (or checked) block is
// applied without executing again; a different block is executed.
func TestCoreExecutesOnce(t *testing.T) {
	w, x := external(t)
	p := w.proposeFrom()
	if x.n != 1 {
		t.Fatalf("%d executions after Propose", x.n)
	}
	c := copyBlock(t, p.Block)
	if _, err := w.c.Apply(c, nil); err != nil {
		t.Fatal(err)
	}
	if x.n != 1 || c.Out.StateDigest != p.Block.Out.StateDigest {
		t.Fatalf("%d executions after applying a copy of the proposal (digest %x, want %x)", x.n, c.Out.StateDigest, p.Block.Out.StateDigest)
	}
	if _, err := w.c.Commit(w.now); err != nil {
		t.Fatal(err)
	}
	p = w.proposeFrom()
	other := copyBlock(t, p.Block)
	other.Round.View++
	if err := w.c.Check(copyBlock(t, other)); err != nil {
		t.Fatal(err)
	}
	n := x.n
	if _, err := w.c.Apply(copyBlock(t, other), nil); err != nil || x.n != n {
		t.Fatalf("applying a copy of the checked block: %v, %d executions (want %d)", err, x.n, n)
	}
	h1, _ := chain.BlockHash(p.Block)
	h2, _ := chain.BlockHash(other)
	if h1 == h2 {
		t.Fatal("two blocks of different rounds hash alike")
	}
}

// TestCoreRetainHeight: Commit reports the retention policy's answer,
// capped at the committed height; no policy keeps everything.
func TestCoreRetainHeight(t *testing.T) {
	w := newWorld(t, 3, 0)
	if res := w.block(); res.RetainHeight != 0 {
		t.Fatalf("retain height %d without a policy", res.RetainHeight)
	}
	p := newWorldWith(t, 3, func(c *chain.Config) {
		c.RetainHeight = func(h uint64) uint64 { return h + 5 }
	})
	var got []uint64
	for range 3 {
		got = append(got, p.block().RetainHeight)
	}
	if !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("retain heights %v, want the policy's capped at the committed height", got)
	}
}

// TestCoreRecoveredReoffered: under an engine's mempool a journaled job
// that no block included is recovered for the driver to offer the engine
// again; admission takes it back once without journaling it twice, and a
// second submission is a duplicate.
func TestCoreRecoveredReoffered(t *testing.T) {
	w, _ := external(t)
	spec := &chain.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 1, TimeoutBlocks: 10, Nonce: 1}
	w.c.LoadJob(spec)
	if got := w.c.Recovered(); len(got) != 1 || string(got[0]) != string(spec.Encode()) {
		t.Fatalf("recovered %d specs, want the journaled one", len(got))
	}
	if _, err := w.c.SubmitJob(spec, w.now); err != nil {
		t.Fatalf("the recovered job offered again: %v", err)
	}
	if _, err := w.c.SubmitJob(spec, w.now); !errors.Is(err, chain.ErrDuplicate) {
		t.Fatalf("a second submission: %v, want ErrDuplicate", err)
	}
	if len(w.jrnl.Specs) != 0 || len(w.c.Recovered()) != 0 {
		t.Fatalf("journal %d, recovered %d after the offer: want neither", len(w.jrnl.Specs), len(w.c.Recovered()))
	}
	own := newWorld(t, 3, 0)
	own.c.LoadJob(spec)
	if len(own.c.Recovered()) != 0 || own.c.MempoolLen() != 1 {
		t.Fatalf("with its own pool: recovered %d, mempool %d: want none (the pool keeps it), 1", len(own.c.Recovered()), own.c.MempoolLen())
	}
}
