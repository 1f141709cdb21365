package cometbft

import (
	"context"
	"sync"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// handPool stands in for CometBFT's mempool on a hand-driven network:
// a validator's BroadcastTx runs its App's CheckTx (what CometBFT's
// mempool does) and keeps what it admits for the next proposal.
type handPool struct {
	mu   sync.Mutex
	apps []*App
	txs  [][]byte
}

// handEngine is validator i's Broadcaster over a handPool.
type handEngine struct {
	p *handPool
	i int
}

func (e handEngine) BroadcastTx(raw []byte) error   { return e.p.check(e.i, raw) }
func (e handEngine) BroadcastJob(spec []byte) error { return e.p.check(e.i, spec) }

func (p *handPool) check(i int, tx []byte) error {
	p.mu.Lock()
	var a *App
	if i < len(p.apps) {
		a = p.apps[i]
	}
	p.mu.Unlock()
	if a == nil {
		return node.ErrClosed
	}
	res, err := a.CheckTx(context.Background(), &abci.CheckTxRequest{Tx: tx, Type: abci.CHECK_TX_TYPE_CHECK})
	if err != nil {
		return err
	}
	if res.Code == CodeOK {
		p.mu.Lock()
		p.txs = append(p.txs, tx)
		p.mu.Unlock()
	}
	return errOf(res.Code, res.Log)
}

// take empties the pool into the next proposal.
func (p *handPool) take() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.txs
	p.txs = nil
	return out
}

// count is the number of pooled transactions of kind for job.
func (p *handPool) count(kind chain.TxKind, job cip11.Hash) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, raw := range p.txs {
		if tx, err := chain.DecodeTx(raw); err == nil && tx.Kind == kind && tx.JobID == job {
			n++
		}
	}
	return n
}

// TestHeldRevealWaitsForInclusion (§10.3: a validator "MUST hold" a
// multi-runner JobResult until the commitment is included and "MUST NOT
// submit an early reveal"). Four validators driven by hand, four runners
// over QUIC, one M = 2 job: both members' commitments reach the mempool
// (admitted by CheckTx) and no reveal follows while no block includes them;
// once a committed block carries them the held reveals are submitted, and
// the job completes.
func TestHeldRevealWaitsForInclusion(t *testing.T) {
	if testing.Short() {
		t.Skip("four validators and four runners over QUIC")
	}
	pool := &handPool{}
	hn := newHandNetWith(t, 4, 4, 4, func(i int) node.Broadcaster { return handEngine{pool, i} })
	pool.mu.Lock()
	pool.apps = hn.apps
	pool.mu.Unlock()
	h := uint64(1)
	next := func() {
		t.Helper()
		hn.decide(t, 0, h, hn.prepare(t, 0, h, pool.take()))
		h++
	}
	for h <= 2 {
		next()
	}
	g := hn.nw.Homes[0].Genesis
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 4 {
		k, err := wire.NewRunnerKey(devkeys.Runner(hn.nw.Opts.Seed, i))
		if err != nil {
			t.Fatal(err)
		}
		r, err := node.NewRunner(ctx, node.RunnerConfig{Genesis: g, Key: k, Chain: node.LocalChain{V: hn.apps[i].v}, Tick: 10 * time.Millisecond, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
	}
	waitFor(t, "every runner connected to its Sub(R) (k = 3 of 4)", func() bool {
		n := 0
		for _, a := range hn.apps {
			n += len(a.v.ConnectedRunners())
		}
		return n == 12
	})
	spec := &node.JobSpec{Submitter: cip11.Address{7}, Kind: 1, Runners: 2, TimeoutBlocks: 60, Nonce: 1}
	if err := pool.check(0, spec.Encode()); err != nil {
		t.Fatal(err)
	}
	for ; ; next() {
		if jv, ok := hn.apps[0].v.Job(spec.ID()); ok && jv.State == job.StateAssigned && len(jv.Committee) == 2 {
			break
		}
		if h > 12 {
			t.Fatal("the M = 2 job was not seated by block 12")
		}
	}
	waitFor(t, "both members' commitments admitted", func() bool { return pool.count(chain.TxCommit, spec.ID()) == 2 })
	time.Sleep(time.Second) // the reveals follow the commitments on the same streams at once
	if n := pool.count(chain.TxReveal, spec.ID()); n != 0 {
		t.Fatalf("%d reveals submitted while the commitments were only admitted, in no block (§10.3: an early reveal)", n)
	}
	next() // a committed block includes both commitments
	waitFor(t, "the held reveals submitted once a committed block includes the commitments", func() bool {
		return pool.count(chain.TxReveal, spec.ID()) == 2
	})
	for ; ; next() {
		if jv, _ := hn.apps[0].v.Job(spec.ID()); jv.State == job.StateCompleted {
			return
		}
		if h > 40 {
			jv, _ := hn.apps[0].v.Job(spec.ID())
			t.Fatalf("the job did not complete: %+v", jv)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within 30 s: %s", what)
		}
	}
}
