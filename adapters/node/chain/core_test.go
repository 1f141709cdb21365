package chain_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// world is a core over an in-memory store with a devnet genesis, driven
// the way the single-validator Solo driver drives it.
type world struct {
	t       *testing.T
	d       *node.GeneratedGenesis
	x       *blockexec.Executor
	log     *chain.MemBlockLog
	jrnl    *chain.MemJournal
	archive *chain.MemArchive
	c       *chain.Core
	prod    *node.Solo
	now     time.Time
	keys    map[cip11.Address]*wire.RunnerKey
}

func newWorld(t *testing.T, runners int, retain uint64) *world {
	t.Helper()
	return newWorldWith(t, runners, func(c *chain.Config) { c.RetainBlocks = retain })
}

func newWorldWith(t *testing.T, runners int, tune func(*chain.Config)) *world {
	t.Helper()
	d, err := node.GenerateGenesis(node.GenesisOptions{Seed: 3, Runners: runners, QUIC: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	x, err := blockexec.New(d.Genesis.Header(), blockexec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, d: d, x: x, log: &chain.MemBlockLog{}, jrnl: &chain.MemJournal{}, archive: &chain.MemArchive{},
		now: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC), keys: map[cip11.Address]*wire.RunnerKey{}}
	var gr []chain.GenesisRunner
	for i, r := range d.Genesis.Runners {
		gr = append(gr, chain.GenesisRunner{Address: r.Address, Stake: r.Stake, ReputationX1e9: r.ReputationX1e9})
		w.keys[r.Address] = d.RunnerKeys[i]
	}
	cfg := chain.Config{Params: d.Genesis.P(), ChainID: uint64(d.Genesis.ChainID), Runners: gr, Key: d.Validator.Peer,
		Exec: x, Log: w.log, Journal: w.jrnl, Archive: w.archive}
	tune(&cfg)
	w.c, err = chain.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := d.Genesis
	w.prod = &node.Solo{Key: d.Validator.Threshold, Namespace: g.Namespace}
	w.prod.Schedule.ViewsPerEpoch, w.prod.Schedule.FirstView, w.prod.Schedule.LastKnownEpoch =
		uint64(g.Schedule.ViewsPerEpoch), uint64(g.Schedule.FirstView), uint64(g.Schedule.LastKnownEpoch)
	return w
}

// propose builds the next block (no presence: every runner is in the
// fallback pool).
func (w *world) propose() *chainlog.Block {
	w.t.Helper()
	cs, err := w.prod.Next(w.c.Height()+1, w.c.Last())
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := w.c.Propose(cs, nil, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	return p.Block
}

// block runs one whole Propose → Apply → Commit step.
func (w *world) block() *chain.Committed {
	w.t.Helper()
	b := w.propose()
	if _, err := w.c.Apply(b, nil); err != nil {
		w.t.Fatal(err)
	}
	w.now = w.now.Add(time.Second)
	res, err := w.c.Commit(w.now)
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

func (w *world) submit(m uint32, timeout uint64, nonce uint64) cip11.Hash {
	w.t.Helper()
	id, err := w.c.SubmitJob(&chain.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: m, TimeoutBlocks: timeout, Nonce: nonce}, w.now)
	if err != nil {
		w.t.Fatal(err)
	}
	return id
}

// reveal submits runner r's M = 1 result for job id.
func (w *world) reveal(id cip11.Hash, r cip11.Address, nonce uint64) error {
	tx, err := chain.SignTx(w.keys[r], uint64(w.d.Genesis.ChainID), chain.TxReveal, nonce, id, chain.RevealPayload(cip11.Hash{1}, cip11.Hash{2}, nil))
	if err != nil {
		w.t.Fatal(err)
	}
	_, err = w.c.SubmitTx(tx.Bytes(), w.now)
	return err
}

func seated(res *chain.Committed, id cip11.Hash) []cip11.Address {
	var out []cip11.Address
	for _, a := range res.Pushes {
		if a.JobID == id {
			out = append(out, a.Runner)
		}
	}
	return out
}

// TestCoreJobLifecycle: a job goes submitted → pending → assigned (a push
// to its committee member after Commit, §10.1) → completed once the
// member's reveal is included with Verified (D23), and the block log holds
// every committed block.
func TestCoreJobLifecycle(t *testing.T) {
	w := newWorld(t, 4, 256)
	w.block() // block 1 registers the genesis runners
	id := w.submit(1, 10, 1)
	if jv, _ := w.c.Job(id); jv.State != job.StateSubmitted {
		t.Fatalf("state %s, want submitted", jv.State)
	}
	var runner cip11.Address
	for range 3 {
		res := w.block()
		if s := seated(res, id); len(s) == 1 {
			runner = s[0]
			break
		}
	}
	if runner == (cip11.Address{}) {
		t.Fatal("no push for the job within 3 blocks")
	}
	if jv, _ := w.c.Job(id); jv.State != job.StateAssigned || !slices.Equal(jv.Committee, []cip11.Address{runner}) {
		t.Fatalf("after assignment: %+v", jv)
	}
	var other cip11.Address
	for a := range w.keys {
		if a != runner {
			other = a
			break
		}
	}
	if err := w.reveal(id, other, 1); !errors.Is(err, chain.ErrBadRequest) {
		t.Fatalf("a reveal from a runner not on the committee: %v, want ErrBadRequest", err)
	}
	if err := w.reveal(id, runner, 1); err != nil {
		t.Fatal(err)
	}
	if err := w.reveal(id, runner, 1); !errors.Is(err, chain.ErrDuplicate) {
		t.Fatalf("the same reveal twice: %v, want ErrDuplicate", err)
	}
	if err := w.reveal(id, runner, 2); !errors.Is(err, chain.ErrDuplicate) {
		t.Fatalf("a second, different reveal from the member: %v, want ErrDuplicate (one result per member)", err)
	}
	w.block()
	jv, _ := w.c.Job(id)
	if jv.State != job.StateCompleted {
		t.Fatalf("after the reveal's block: state %s, want completed", jv.State)
	}
	if got := uint64(len(w.log.Blocks)); got != w.c.Height() {
		t.Fatalf("block log holds %d blocks at height %d", got, w.c.Height())
	}
	if c := w.c.Counts(); c[job.StateCompleted] != 1 || c[job.StateSubmitted] != 0 {
		t.Fatalf("counts %v", c)
	}
	if s := w.c.Stats(); s.Completed != 1 || s.Submitted != 1 || s.JobLatencyBlocks.Count() != 1 {
		t.Fatalf("stats completed %d submitted %d latencies %d", s.Completed, s.Submitted, s.JobLatencyBlocks.Count())
	}
}

// TestCoreStepOrder: the steps refuse to run out of their order with
// ErrOutOfOrder, and a refused step changes nothing.
func TestCoreStepOrder(t *testing.T) {
	w := newWorld(t, 2, 256)
	if _, err := w.c.Commit(w.now); !errors.Is(err, chain.ErrOutOfOrder) {
		t.Fatalf("Commit with nothing applied: %v", err)
	}
	b := w.propose()
	skip := *b
	skip.Height = 2
	if _, err := w.c.Apply(&skip, nil); !errors.Is(err, chain.ErrOutOfOrder) {
		t.Fatalf("Apply of block 2 at height 0: %v", err)
	}
	b = w.propose()
	if _, err := w.c.Apply(b, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Apply(b, nil); !errors.Is(err, chain.ErrOutOfOrder) {
		t.Fatalf("a second Apply: %v", err)
	}
	cs, _ := w.prod.Next(2, b)
	if _, err := w.c.Propose(cs, nil, nil); !errors.Is(err, chain.ErrOutOfOrder) {
		t.Fatalf("Propose while a block awaits Commit: %v", err)
	}
	if err := w.c.Check(b); !errors.Is(err, chain.ErrOutOfOrder) {
		t.Fatalf("Check while a block awaits Commit: %v", err)
	}
	if w.c.Height() != 0 {
		t.Fatalf("height %d before Commit", w.c.Height())
	}
	if _, err := w.c.Commit(w.now); err != nil {
		t.Fatal(err)
	}
	if w.c.Height() != 1 {
		t.Fatalf("height %d after Commit", w.c.Height())
	}
}

// TestCoreCheck: Check accepts the block another proposer built and
// rejects one whose outputs were tampered with (ErrInvalidBlock), and
// neither commits anything.
func TestCoreCheck(t *testing.T) {
	w := newWorld(t, 4, 256)
	w.block()
	w.submit(1, 10, 1)
	b := w.propose()
	good := *b
	if err := w.c.Check(&good); err != nil {
		t.Fatalf("Check of a valid proposal: %v", err)
	}
	bad := *b
	bad.Out.StateDigest[0] ^= 1
	if err := w.c.Check(&bad); !errors.Is(err, chain.ErrInvalidBlock) {
		t.Fatalf("Check of a tampered digest: %v, want ErrInvalidBlock", err)
	}
	if w.c.Height() != 1 || len(w.log.Blocks) != 1 {
		t.Fatalf("Check committed: height %d, log %d", w.c.Height(), len(w.log.Blocks))
	}
	// the proposal is still applicable after checks discarded it
	if _, err := w.c.Apply(&good, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Commit(w.now); err != nil {
		t.Fatal(err)
	}
	if good.Out.StateDigest != b.Out.StateDigest {
		t.Fatal("re-executed block differs from the proposal")
	}
}

// TestCoreFailedAppendIsSticky: a block log that cannot be written puts the
// core into the failed state (ErrFailed with the cause): the state is not
// committed and every later step refuses.
func TestCoreFailedAppendIsSticky(t *testing.T) {
	w := newWorld(t, 2, 256)
	w.block()
	disk := errors.New("no space left on device")
	w.log.Fail = disk
	b := w.propose()
	_, err := w.c.Apply(b, nil)
	if !errors.Is(err, chain.ErrFailed) || !errors.Is(err, disk) {
		t.Fatalf("Apply with a failing log: %v", err)
	}
	w.log.Fail = nil
	if w.c.Height() != 1 {
		t.Fatalf("height %d after a failed append", w.c.Height())
	}
	if h, _ := w.x.LastCommitted(); h != 1 {
		t.Fatalf("store committed height %d after a failed append", h)
	}
	cs, _ := w.prod.Next(2, w.c.Last())
	if _, err := w.c.Propose(cs, nil, nil); !errors.Is(err, chain.ErrFailed) {
		t.Fatalf("Propose after failure: %v", err)
	}
	if _, err := w.c.SubmitJob(&chain.JobSpec{Runners: 1, TimeoutBlocks: 5, Kind: 1}, w.now); !errors.Is(err, chain.ErrFailed) {
		t.Fatalf("SubmitJob after failure: %v", err)
	}
	if !errors.Is(w.c.Err(), chain.ErrFailed) {
		t.Fatalf("Err() = %v", w.c.Err())
	}
}

// TestCoreFailedJournalRefuses: a job the journal could not record is not
// accepted, and the core accepts nothing more (a node that cannot record
// what it accepts must stop, issue 18 item 18).
func TestCoreFailedJournalRefuses(t *testing.T) {
	w := newWorld(t, 2, 256)
	w.jrnl.Fail = errors.New("no space left on device")
	spec := &chain.JobSpec{Submitter: cip11.Address{1}, Runners: 1, TimeoutBlocks: 5, Kind: 1}
	id, err := w.c.SubmitJob(spec, w.now)
	if !errors.Is(err, chain.ErrFailed) {
		t.Fatalf("SubmitJob with a failing journal: %v", err)
	}
	if _, ok := w.c.Job(id); ok {
		t.Fatal("a job the journal refused is tracked")
	}
	if w.c.MempoolLen() != 0 {
		t.Fatalf("mempool %d", w.c.MempoolLen())
	}
}

// TestCorePrunesEndedJobs: a job that ended leaves memory RetainBlocks
// blocks later; its final view is still answered (from the archive), and
// the per-state counts keep it.
func TestCorePrunesEndedJobs(t *testing.T) {
	w := newWorld(t, 3, 3)
	w.block()
	id := w.submit(1, 2, 1) // nobody answers: it expires after D26's re-selections
	var ended uint64
	for range 40 {
		w.block()
		if jv, _ := w.c.Job(id); jv.State == job.StateExpired && ended == 0 {
			ended = w.c.Height()
		}
		if ended != 0 && w.c.Height() >= ended+4 {
			break
		}
	}
	if ended == 0 {
		t.Fatal("the job did not expire")
	}
	if n := w.c.InMemory(); n != 0 {
		t.Fatalf("%d jobs in memory %d blocks after the job ended", n, w.c.Height()-ended)
	}
	if w.archive.Len() != 1 {
		t.Fatalf("archive holds %d jobs", w.archive.Len())
	}
	jv, ok := w.c.Job(id)
	if !ok || jv.State != job.StateExpired || jv.ID != id {
		t.Fatalf("pruned job's view: ok %v %+v", ok, jv)
	}
	if c := w.c.Counts(); c[job.StateExpired] != 1 {
		t.Fatalf("counts after pruning: %v", c)
	}
	if _, err := w.c.SubmitJob(&chain.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 1, TimeoutBlocks: 2, Nonce: 1}, w.now); !errors.Is(err, chain.ErrDuplicate) {
		t.Fatalf("re-submitting a pruned job: %v, want ErrDuplicate", err)
	}
}

// TestCoreCancels: a seat re-drawn on timeout gets JobCancel{Reassigned}
// and an expired job's seat JobCancel{Expired} (§10.5, §11.2).
func TestCoreCancels(t *testing.T) {
	w := newWorld(t, 8, 256)
	w.block()
	id := w.submit(1, 2, 1)
	var reasons []wire.CancelReason
	for range 40 {
		res := w.block()
		for _, x := range res.Cancels {
			if x.JobID == id {
				reasons = append(reasons, x.Reason)
			}
		}
		if jv, _ := w.c.Job(id); jv.State == job.StateExpired {
			break
		}
	}
	if len(reasons) < 2 || reasons[0] != wire.CancelReassigned || reasons[len(reasons)-1] != wire.CancelExpired {
		t.Fatalf("cancel reasons %v, want Reassigned … Expired", reasons)
	}
}

// TestCoreRestore: a second core over the same store, fed the first one's
// block log (Restore) and journal, reaches the same height and job states.
func TestCoreRestore(t *testing.T) {
	w := newWorld(t, 3, 256)
	w.block()
	id := w.submit(1, 10, 1)
	pending := w.submit(2, 10, 2)
	for range 3 {
		w.block()
	}
	w2 := newWorld(t, 3, 256)
	for _, p := range w.jrnl.Specs {
		s, err := chain.DecodeJobSpec(p)
		if err != nil {
			t.Fatal(err)
		}
		w2.c.LoadJob(s)
	}
	for i := range w.log.Blocks {
		b := w.log.Blocks[i]
		if err := w2.c.Check(&b); err != nil {
			t.Fatalf("block %d: %v", b.Height, err)
		}
		if _, err := w2.c.Apply(&b, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := w2.c.Commit(time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	keep := w2.c.FinishRecovery()
	if w2.c.Height() != w.c.Height() {
		t.Fatalf("height %d, want %d", w2.c.Height(), w.c.Height())
	}
	for _, j := range []cip11.Hash{id, pending} {
		a, _ := w.c.Job(j)
		b, _ := w2.c.Job(j)
		if a.State != b.State || !slices.Equal(a.Committee, b.Committee) {
			t.Fatalf("job %s: %s %v, restored %s %v", j, a.State, a.Committee, b.State, b.Committee)
		}
	}
	if len(keep) != 2 {
		t.Fatalf("journal keeps %d specs, want the 2 open jobs", len(keep))
	}
}

// TestCoreRefusesMoreRunnersThanRegistered (issue 18 item 17): a job
// asking for a committee larger than the registered runners is refused at
// submission, with both counts, instead of being seated short.
func TestCoreRefusesMoreRunnersThanRegistered(t *testing.T) {
	w := newWorld(t, 3, 256)
	_, err := w.c.SubmitJob(&chain.JobSpec{Submitter: cip11.Address{1}, Kind: 1, Runners: 4, TimeoutBlocks: 5}, w.now)
	if !errors.Is(err, chain.ErrBadRequest) || !strings.Contains(err.Error(), "asks for 4 runners and 3 are registered") {
		t.Fatalf("before block 1: %v", err)
	}
	w.block()
	if _, err := w.c.SubmitJob(&chain.JobSpec{Submitter: cip11.Address{1}, Kind: 1, Runners: 4, TimeoutBlocks: 5}, w.now); !errors.Is(err, chain.ErrBadRequest) {
		t.Fatalf("after block 1: %v", err)
	}
	if _, err := w.c.SubmitJob(&chain.JobSpec{Submitter: cip11.Address{1}, Kind: 1, Runners: 3, TimeoutBlocks: 5}, w.now); err != nil {
		t.Fatalf("a committee of every registered runner: %v", err)
	}
}

// TestCoreMempoolBounds (issue 18 item 11): the mempool refuses past
// MaxMempool with ErrMempoolFull, and one proposal carries at most
// MaxBlockSubmits submits, the rest following in arrival order.
func TestCoreMempoolBounds(t *testing.T) {
	w := newWorldWith(t, 3, func(c *chain.Config) { c.MaxMempool = 5; c.MaxBlockSubmits = 2 })
	w.block()
	for i := range 5 {
		w.submit(1, 5, uint64(i))
	}
	_, err := w.c.SubmitJob(&chain.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 1, TimeoutBlocks: 5, Nonce: 99}, w.now)
	if !errors.Is(err, chain.ErrMempoolFull) {
		t.Fatalf("a sixth submit: %v, want ErrMempoolFull", err)
	}
	for _, want := range []int{2, 2, 1, 0} {
		n := 0
		for _, tx := range w.block().Block.Txs {
			if tx.Submit != nil {
				n++
			}
		}
		if n != want {
			t.Fatalf("block %d carries %d submits, want %d", w.c.Height(), n, want)
		}
	}
}

// TestCoreKeepsUndrawnHeartbeats: on a network the block another validator
// proposed may not carry a heartbeat this validator admitted (it reached
// the proposer too late). The heartbeat stays in this validator's mempool
// and its own next proposal carries it; one the committed block carried
// leaves it (SPEC-NOTES C6). Before, every commit cleared the mempool's
// heartbeats, which lost them on every validator but the proposer.
func TestCoreKeepsUndrawnHeartbeats(t *testing.T) {
	a, b := newWorld(t, 3, 0), newWorld(t, 3, 0)
	for range 2 { // both at height 2
		blk := a.block().Block
		if err := b.c.Check(blk); err != nil {
			t.Fatal(err)
		}
		if _, err := b.c.Apply(blk, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := b.c.Commit(b.now); err != nil {
			t.Fatal(err)
		}
	}
	r := b.d.RunnerKeys[1]
	hb, err := chain.SignTx(r, uint64(b.d.Genesis.ChainID), chain.TxHeartbeat, 2, cip11.Hash{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.SubmitTx(hb.Bytes(), b.now); err != nil {
		t.Fatal(err)
	}
	// block 3 from a, which never saw the heartbeat
	blk := a.block().Block
	if len(blk.Heartbeats) != 0 {
		t.Fatalf("a's block carries heartbeats %v", blk.Heartbeats)
	}
	if _, err := b.c.Apply(blk, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Commit(b.now); err != nil {
		t.Fatal(err)
	}
	if b.c.MempoolLen() != 1 {
		t.Fatalf("b's mempool holds %d entries after a block without its heartbeat, want 1", b.c.MempoolLen())
	}
	own := b.block().Block // b proposes block 4
	if len(own.Heartbeats) != 1 || own.Heartbeats[0] != 1 {
		t.Fatalf("b's own proposal carries heartbeats %v, want [1] (runner index 1)", own.Heartbeats)
	}
	if b.c.MempoolLen() != 0 {
		t.Fatalf("b's mempool holds %d entries after its block carried the heartbeat, want 0", b.c.MempoolLen())
	}
}

// signRaw signs a node transaction byte by byte (past SignTx's checks).
func (w *world) signRaw(r cip11.Address, kind chain.TxKind, nonce uint64, id cip11.Hash, p []byte) []byte {
	w.t.Helper()
	b := append([]byte("C11T"), 2, byte(kind))
	b = binary.BigEndian.AppendUint64(b, uint64(w.d.Genesis.ChainID))
	b = append(b, r[:]...)
	b = binary.BigEndian.AppendUint64(b, nonce)
	b = append(b, id[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	b = append(b, p...)
	sig, err := w.keys[r].Sign(cip11.Keccak256([]byte(chain.TxDomain), b))
	if err != nil {
		w.t.Fatal(err)
	}
	return append(b, sig[:]...)
}

// TestCoreRevealOutput (SPEC-NOTES C12): a reveal carrying an output whose
// keccak256 is not its result, or an output over MaxOutput, is refused at
// admission with ErrRevealOutput; the completed job's view has the
// payload, the verified majority's output and per member revealed and
// matched — for M = 3 with one disagreeing member too — and keeps them
// in the archive (and through the archive's JSON).
func TestCoreRevealOutput(t *testing.T) {
	w := newWorldWith(t, 4, func(c *chain.Config) { c.RetainBlocks = 2 })
	w.block()
	chainID := uint64(w.d.Genesis.ChainID)
	spec := &chain.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 1, TimeoutBlocks: 20, Nonce: 1, Payload: []byte("hello cip11")}
	id, err := w.c.SubmitJob(spec, w.now)
	if err != nil {
		t.Fatal(err)
	}
	var runner cip11.Address
	for range 3 {
		if s := seated(w.block(), id); len(s) == 1 {
			runner = s[0]
			break
		}
	}
	if runner == (cip11.Address{}) {
		t.Fatal("no push within 3 blocks")
	}
	out := []byte("HELLO CIP11")
	over := make([]byte, chain.MaxOutput+1)
	for name, p := range map[string][]byte{
		"hash mismatch": chain.RevealPayload(cip11.Keccak256([]byte("HELLO CIP12")), cip11.Hash{2}, out),
		"over the max":  chain.RevealPayload(cip11.Keccak256(over), cip11.Hash{2}, over),
	} {
		if _, err := w.c.SubmitTx(w.signRaw(runner, chain.TxReveal, 1, id, p), w.now); !errors.Is(err, chain.ErrRevealOutput) {
			t.Errorf("%s: %v, want ErrRevealOutput", name, err)
		}
	}
	tx, err := chain.SignTx(w.keys[runner], chainID, chain.TxReveal, 1, id, chain.RevealPayload(cip11.Keccak256(out), cip11.Hash{2}, out))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.SubmitTx(tx.Bytes(), w.now); err != nil {
		t.Fatal(err)
	}
	w.block()
	jv, _ := w.c.Job(id)
	if jv.State != job.StateCompleted || string(jv.Payload) != "hello cip11" || jv.Output == nil || string(*jv.Output) != string(out) ||
		!slices.Equal(jv.Members, []job.Member{{Runner: runner, Revealed: true, Matched: true}}) {
		t.Fatalf("M = 1 view: %+v", jv)
	}

	// M = 3, the third member disagreeing.
	spec3 := &chain.JobSpec{Submitter: cip11.Address{0xaa}, Kind: 1, Runners: 3, TimeoutBlocks: 30, Nonce: 2, Payload: []byte("x")}
	id3, err := w.c.SubmitJob(spec3, w.now)
	if err != nil {
		t.Fatal(err)
	}
	var committee []cip11.Address
	for range 10 {
		if s := seated(w.block(), id3); len(s) == 3 {
			committee = s
			break
		}
	}
	if committee == nil {
		t.Fatal("no M = 3 committee within 10 blocks")
	}
	for i, r := range committee {
		o := []byte("X")
		if i == 2 {
			o = []byte("Y")
		}
		res, salt := cip11.Keccak256(o), cip11.Hash{byte(i)}
		cm := chain.Commitment(res, salt)
		ct, err := chain.SignTx(w.keys[r], chainID, chain.TxCommit, 10, id3, cm[:])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.c.SubmitTx(ct.Bytes(), w.now); err != nil {
			t.Fatal(err)
		}
		rt, err := chain.SignTx(w.keys[r], chainID, chain.TxReveal, 11, id3, chain.RevealPayload(res, salt, o))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.c.SubmitTx(rt.Bytes(), w.now); err != nil {
			t.Fatal(err)
		}
	}
	w.block()
	jv3, _ := w.c.Job(id3)
	want := []job.Member{{Runner: committee[0], Revealed: true, Matched: true}, {Runner: committee[1], Revealed: true, Matched: true},
		{Runner: committee[2], Revealed: true, Matched: false}}
	if jv3.State != job.StateCompleted || jv3.Output == nil || string(*jv3.Output) != "X" || !slices.Equal(jv3.Members, want) {
		t.Fatalf("M = 3 view: %+v", jv3)
	}

	// Archived (RetainBlocks 2): the view keeps output and members, also
	// through the JSON the persistent archive writes.
	for range 3 {
		w.block()
	}
	if w.archive.Len() < 2 {
		t.Fatalf("archive holds %d views", w.archive.Len())
	}
	av, ok := w.c.Job(id3)
	if !ok || av.Output == nil || string(*av.Output) != "X" || !slices.Equal(av.Members, want) {
		t.Fatalf("archived view: %+v", av)
	}
	raw, err := json.Marshal(av)
	if err != nil {
		t.Fatal(err)
	}
	var back job.View
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Output == nil || string(*back.Output) != "X" || string(back.Payload) != "x" || !slices.Equal(back.Members, want) {
		t.Fatalf("view through JSON: %+v (%s)", back, raw)
	}
}
