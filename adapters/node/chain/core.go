package chain

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/wire"
)

// GenesisRunner is a runner registered in block 1.
type GenesisRunner struct {
	Address        cip11.Address
	Stake          cip11.U128
	ReputationX1e9 chainlog.U64
}

// Config configures a [Core]. Every field is documented; [Config.Validate]
// reports the first missing dependency.
type Config struct {
	// Params are the chain's §13 parameters.
	Params cip11.Params
	// ChainID is bound into every signed assignment (§12.6).
	ChainID uint64
	// Runners are registered in block 1 (genesis).
	Runners []GenesisRunner
	// Key signs the poll fallback's assignments (§14); the validator's
	// peer key.
	Key *wire.ValidatorKey
	// Exec executes blocks over the state store.
	Exec Executor
	// Log is the block log (durable before Commit).
	Log BlockLog
	// Journal records accepted job submissions.
	Journal Journal
	// Archive keeps pruned jobs' final views (default: an in-memory one,
	// which still bounds the job tracker but not the archive).
	Archive Archive
	// RetainBlocks is how long a terminal job stays in memory after it
	// ended, in blocks (default 256).
	RetainBlocks uint64
	// MaxMempool bounds what waits for a block: job submits,
	// registrations and heartbeats together (default 10,000); past it a
	// submission is refused with ErrMempoolFull.
	MaxMempool int
	// MaxBlockSubmits bounds the job submits one proposal includes
	// (default 1,000); the rest wait for the next block, in order.
	MaxBlockSubmits int
	// ModeA admits SubmitPresenceCertificate transactions (§8.3) and
	// includes them in blocks; the chain log's header must then carry the
	// Mode-A machinery (receipt_chain_id, peer_pubkeys). Off: a certificate
	// transaction is refused with ErrBadRequest.
	ModeA bool
	// Admin is the DEVNET admin whose TxReconfigure the chain accepts
	// (the genesis's devnet_admin, SPEC-NOTES C11); nil refuses every
	// reconfiguration with ErrBadRequest.
	Admin *cip11.Address
	// Logger (default: discard).
	Logger *slog.Logger
	// History, if set, is told of every job event that does not come from
	// a block (pushes, acks, §10.6 outcomes, cancels), so that a restarted
	// node can give them back (RestoreHistory); block events are rebuilt
	// from the block log.
	History History
	// ExternalMempool: a consensus engine's mempool (CometBFT's, D33) is
	// the only mempool. Admission (SubmitJob, SubmitTx: CheckTx) checks,
	// journals and tracks but pools nothing; [Core.Propose] builds from
	// the transactions the engine hands it; [Core.Apply] learns what the
	// decided block carries. Off: the core keeps its own pool (one
	// validator) and Propose draws from it.
	ExternalMempool bool
	// RetainHeight is the retention policy Commit reports
	// ([Committed.RetainHeight]): given the committed height, the lowest
	// height whose block the engine must keep (nil or 0: keep everything).
	RetainHeight func(committed uint64) uint64
}

// Defaults of [Config].
const (
	DefaultRetainBlocks    = 256
	DefaultMaxMempool      = 10_000
	DefaultMaxBlockSubmits = 1_000
)

// Validate reports the first missing dependency, wrapping ErrNilConfig.
func (c *Config) Validate() error {
	switch {
	case c.Exec == nil:
		return fmt.Errorf("%w: Exec", ErrNilConfig)
	case c.Log == nil:
		return fmt.Errorf("%w: Log", ErrNilConfig)
	case c.Journal == nil:
		return fmt.Errorf("%w: Journal", ErrNilConfig)
	case c.Key == nil:
		return fmt.Errorf("%w: Key", ErrNilConfig)
	case c.MaxMempool < 0 || c.MaxBlockSubmits < 0:
		return fmt.Errorf("%w: negative MaxMempool %d or MaxBlockSubmits %d", ErrBadRequest, c.MaxMempool, c.MaxBlockSubmits)
	}
	return nil
}

func (c *Config) defaults() {
	if c.Archive == nil {
		c.Archive = &MemArchive{}
	}
	if c.RetainBlocks == 0 {
		c.RetainBlocks = DefaultRetainBlocks
	}
	if c.MaxMempool == 0 {
		c.MaxMempool = DefaultMaxMempool
	}
	if c.MaxBlockSubmits == 0 {
		c.MaxBlockSubmits = DefaultMaxBlockSubmits
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Core is the synchronous chain core (package doc). It is not safe for
// concurrent use: one driver goroutine owns it.
type Core struct {
	cfg  Config
	p    cip11.Params
	x    Executor
	log  *slog.Logger
	last *chainlog.Block
	err  error // sticky failure (ErrFailed)

	open     *chainlog.Block // executed, not committed
	openHash cip11.Hash      // BlockHash(open): what a later step's block must hash to, to reuse it
	applied  bool            // open is in the block log and awaits Commit
	// drawn is the pool the open proposal drew from (Signed,
	// CertificateTx); nil: the core's own.
	drawn *mempool

	mem       mempool
	jobs      map[cip11.Hash]*trackedJob
	live      []cip11.Hash // jobs not terminal, in submission order
	ended     []endedJob   // terminal jobs still in memory, by end height
	counts    [5]int       // jobs in memory by state (index: stateIndex)
	archived  [5]int       // terminal jobs pruned to the archive (completed, expired)
	runnerIdx map[cip11.Address]int
	runnerAt  []cip11.Address // registry index → address (runnerIdx inverted)
	pubkeys   map[cip11.Address]wire.PubKey
	stats     Stats
	recent    []job.BlockSummary // ring of the last 60 blocks
	lat       latRing
	failures  []Failure // ring of the last MaxFailures
	outcomes  map[cip11.Address]LastOutcome
}

// New builds a core over cfg's dependencies. The store may already hold
// blocks: the driver then feeds the block log through [Core.Restore] and
// [Core.RecoverTail] before any other step.
func New(cfg Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	return &Core{cfg: cfg, p: cfg.Params, x: cfg.Exec, log: cfg.Logger,
		jobs: map[cip11.Hash]*trackedJob{}, runnerIdx: map[cip11.Address]int{}, pubkeys: map[cip11.Address]wire.PubKey{},
		mem: newMempool()}, nil
}

// Err is the sticky failure (nil while healthy), wrapping ErrFailed.
func (c *Core) Err() error { return c.err }

// Height is the last committed block height (0 before block 1).
func (c *Core) Height() uint64 {
	if c.last == nil {
		return 0
	}
	return uint64(c.last.Height)
}

// Last is the last committed block (nil before block 1). The caller must
// not modify it.
func (c *Core) Last() *chainlog.Block { return c.last }

func (c *Core) check() error {
	if c.err != nil {
		return c.err
	}
	return nil
}

// discardOpen drops a speculative execution (never an applied one).
func (c *Core) discardOpen() {
	if c.open != nil && !c.applied {
		c.x.Discard()
		c.open, c.drawn = nil, nil
	}
}

// keep records b's execution as the open one, keyed by its hash.
func (c *Core) keep(b *chainlog.Block) error {
	h, err := BlockHash(b)
	if err != nil {
		c.x.Discard()
		return fmt.Errorf("%w: block %d: %w", ErrInvalidBlock, b.Height, err)
	}
	c.open, c.openHash = b, h
	return nil
}

// BlockHash is the hash of block b's inputs (its chainlog encoding without
// Out): two blocks with the same hash execute to the same outputs, so the
// core keys its open execution by it, never by pointer identity (a block
// decoded again from an engine's transactions reuses its execution).
func BlockHash(b *chainlog.Block) (cip11.Hash, error) {
	in := *b
	in.Out = chainlog.Output{}
	enc, err := chainlog.EncodeBlock(&in)
	if err != nil {
		return cip11.Hash{}, err
	}
	return sha256.Sum256(enc), nil
}

// Proposal is what [Core.Propose] returns: the executed block (Out set)
// and the submissions a network block must carry beside its body
// (blocklayout): the spec of each job it submits, in order, the signed
// transaction of each certificate, then those behind its registrations,
// heartbeats, results and reconfiguration (Signed).
type Proposal struct {
	Block *chainlog.Block
	Carry [][]byte
	// Extra are the given transactions (Config.ExternalMempool) the block
	// should carry beyond Carry, as room allows: CIP-2 commitments and
	// reveals (a carried commitment is an included one, §10.3) and what
	// no block can use any more (an included job's spec, a spent
	// heartbeat), so that the engine's mempool drains it. What still
	// waits (a job past MaxBlockSubmits, a heartbeat signed for a later
	// height) is in neither: it stays in the engine's mempool.
	Extra [][]byte
}

// Carried is what a decided network block carries beside its body
// (blocklayout's raw submissions), for [Core.Apply] to learn: the encoded
// job specs and the decoded, signature-checked node transactions.
type Carried struct {
	Specs [][]byte
	Txs   []*Tx
	// At stamps the job events of what is learned.
	At time.Time
}

// Propose builds block h = Height()+1 and executes it (D23 transaction
// order), with the consensus context cs and pres as its PresenceInputV1
// (§7.2; ignored at h = 1, whose registry(0) is empty; nil: no runner
// known present, every runner in the fallback pool). It draws from txs,
// the engine's mempool (raw job specs and node transactions, in the
// engine's order), with Config.ExternalMempool, and from the core's own
// pool otherwise (txs must then be empty). What the block cannot carry
// (a job already included, a heartbeat already counted, a malformed
// transaction) is left out.
// The returned block carries its Output; its execution stays open for a
// following Apply of a block with the same hash and is discarded by any
// other step. A transaction the checks let through but the block rejects
// is dropped: the block is proposed without transactions.
func (c *Core) Propose(cs Consensus, pres []byte, txs [][]byte) (*Proposal, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.applied {
		return nil, fmt.Errorf("%w: propose while block %d awaits Commit", ErrOutOfOrder, c.open.Height)
	}
	if len(txs) > 0 && !c.cfg.ExternalMempool {
		return nil, fmt.Errorf("%w: transactions handed to a core with its own mempool", ErrBadRequest)
	}
	c.discardOpen()
	m, extra := &c.mem, [][]byte(nil)
	if c.cfg.ExternalMempool {
		m, extra = c.poolFrom(txs)
	}
	h := c.Height() + 1
	b := &chainlog.Block{
		Height: chainlog.U64(h), Round: chainlog.Round{Epoch: chainlog.U64(cs.Round.Epoch), View: chainlog.U64(cs.Round.View)},
		ParentBeacon: cs.ParentBeacon, Registry: []chainlog.RegistryOp{}, Heartbeats: []uint32{}, Txs: []chainlog.Tx{},
	}
	if cs.Finalized != nil {
		f := chainlog.U64(*cs.Finalized)
		b.Finalized = &f
	}
	if h == 1 || pres == nil {
		n := 0 // registry(0) is empty
		if h > 1 {
			prev, err := c.x.Store().Registry().At(h - 1)
			if err != nil {
				return nil, fmt.Errorf("registry at %d: %w", h-1, err)
			}
			n = len(prev.ActiveRunners())
		}
		empty, err := presence.NewSet(n, nil)
		if err != nil {
			return nil, err
		}
		pres = presence.Encode(empty)
	}
	pb := chainlog.Bytes(slices.Clone(pres))
	b.Presence = &pb
	var err error
	if b.ConsumedSeeds, err = engine.ProposeConsumedSeeds(c.x.Store().Pending(), cs.Round, cs.Finalized, cs.Seed); err != nil {
		return nil, fmt.Errorf("consumed seeds: %w", err)
	}
	c.registryOps(h, b, m)
	full := c.txs(h, b, m)
	out, err := c.x.Execute(b)
	if err != nil && full {
		c.log.Warn("block invalid with its transactions; proposing it without them", "height", h, "err", err)
		b.Txs = []chainlog.Tx{}
		out, err = c.x.Execute(b)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: block %d: %w", ErrInvalidBlock, h, err)
	}
	b.Out = out
	if err := c.keep(b); err != nil {
		return nil, err
	}
	c.drawn = m
	var carry [][]byte
	for _, tx := range b.Txs {
		switch {
		case tx.Submit != nil:
			carry = append(carry, c.Spec(tx.Submit.JobID))
		case tx.Certificate != nil:
			carry = append(carry, c.CertificateTx(tx.Certificate.Runner))
		}
	}
	return &Proposal{Block: b, Carry: append(carry, c.Signed(b)...), Extra: extra}, nil
}

// Check executes block b, proposed by someone else. With b.Out set (a
// block read from a log) the outputs must match it too. It is
// deterministic: every validator reaches the same verdict. A valid b gets
// its Out and, like Propose's block, keeps its execution open for a
// following Apply of a block with the same hash (ProcessProposal then
// FinalizeBlock execute once); any other step discards it. An invalid b is
// discarded.
func (c *Core) Check(b *chainlog.Block) error {
	if err := c.check(); err != nil {
		return err
	}
	if c.applied {
		return fmt.Errorf("%w: check while block %d awaits Commit", ErrOutOfOrder, c.open.Height)
	}
	c.discardOpen()
	if h := uint64(b.Height); h != c.Height()+1 {
		return fmt.Errorf("%w: block %d at height %d", ErrOutOfOrder, h, c.Height())
	}
	out, err := c.x.Execute(b)
	if err != nil {
		c.x.Discard()
		return fmt.Errorf("%w: block %d: %w", ErrInvalidBlock, b.Height, err)
	}
	if hasOutput(&b.Out) {
		if d := blockexec.DiffOutput(uint64(b.Height), &b.Out, &out); d != nil {
			c.x.Discard()
			return fmt.Errorf("%w: %w", ErrInvalidBlock, d)
		}
	}
	b.Out = out
	return c.keep(b)
}

func hasOutput(o *chainlog.Output) bool {
	return len(o.Assignments) > 0 || len(o.Expired) > 0 || o.StateDigest != (cip11.Hash{})
}

// Applied is what [Core.Apply] returns.
type Applied struct {
	Block *chainlog.Block
}

// Apply executes the decided block b (reusing the open execution when b
// hashes to the block Propose or Check executed, BlockHash), sets b.Out
// and appends b to the block log. With carried (a network block's raw
// submissions) it first learns what the block brings that admission did
// not: the spec of each job the body submits and the core does not track
// (journaled once, before the block log holds the block), the CIP-2
// commitments and reveals, the keys of registering runners. Nothing is
// admitted again and nothing enters a mempool. The state is committed by
// the following Commit. A failed journal or block-log append puts the
// core into the failed state.
func (c *Core) Apply(b *chainlog.Block, carried *Carried) (*Applied, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.applied {
		return nil, fmt.Errorf("%w: block %d awaits Commit", ErrOutOfOrder, c.open.Height)
	}
	if h := uint64(b.Height); h != c.Height()+1 {
		c.discardOpen()
		return nil, fmt.Errorf("%w: block %d at height %d", ErrOutOfOrder, h, c.Height())
	}
	hash, err := BlockHash(b)
	if err != nil {
		c.discardOpen()
		return nil, fmt.Errorf("%w: block %d: %w", ErrInvalidBlock, b.Height, err)
	}
	if c.open == nil || hash != c.openHash {
		c.discardOpen()
		out, err := c.x.Execute(b)
		if err != nil {
			c.x.Discard()
			return nil, fmt.Errorf("%w: block %d: %w", ErrInvalidBlock, b.Height, err)
		}
		b.Out = out
		c.open, c.openHash = b, hash
	} else if c.open != b {
		b.Out = c.open.Out
		c.open = b
	}
	if err := c.learn(b, carried); err != nil {
		c.x.Discard()
		c.open, c.drawn = nil, nil
		return nil, err
	}
	if err := c.cfg.Log.Append(b); err != nil {
		c.x.Discard()
		c.open, c.drawn = nil, nil
		c.err = failed(fmt.Sprintf("block log append of block %d", b.Height), err)
		return nil, c.err
	}
	c.applied = true
	return &Applied{Block: b}, nil
}

// learn takes in what decided block b carries beside its body (Apply):
// specs of the jobs b submits that the core does not track (journaled,
// then tracked), every CIP-2 commitment and reveal (the verifier's, as
// admission would have recorded them; known ones change nothing), and the
// keys of the runners b registers (the poll fallback, §14).
func (c *Core) learn(b *chainlog.Block, carried *Carried) error {
	if carried == nil {
		return nil
	}
	for _, raw := range carried.Specs {
		spec, err := DecodeJobSpec(raw)
		if err != nil {
			continue
		}
		p := spec.Encode()
		id := cip11.Keccak256([]byte(JobIDDomain), p)
		if c.jobs[id] != nil || !submits(b, id) {
			continue
		}
		if err := c.cfg.Journal.Append(p); err != nil {
			c.err = failed("job journal append", err)
			return c.err
		}
		c.trackEncoded(spec, id, p)
	}
	for _, tx := range carried.Txs {
		if tx.ChainID != c.cfg.ChainID {
			continue
		}
		switch tx.Kind {
		case TxCommit, TxReveal:
			if h := tx.Hash(); !c.mem.known[h] && !c.mem.old[h] && c.verifyResult(tx, carried.At) == nil {
				c.stats.ResultsForwarded++
				c.mem.known[h] = true
			}
		case TxRegister:
			c.learnKey(tx)
		}
	}
	return nil
}

// submits reports whether b's body submits job id.
func submits(b *chainlog.Block, id cip11.Hash) bool {
	for _, tx := range b.Txs {
		if tx.Submit != nil && tx.Submit.JobID == id {
			return true
		}
	}
	return false
}

// Assignment is one push the driver must send after Commit (§10.1): the
// signed JobAssignment for a newly seated committee member.
type Assignment struct {
	JobID            cip11.Hash
	JobSpec          []byte
	AssignmentHeight uint64
	DeadlineBlock    uint64
	Runner           cip11.Address
	MultiRunner      bool
}

// Cancel is one JobCancel the driver should send (§10.5).
type Cancel struct {
	JobID  cip11.Hash
	Runner cip11.Address
	Reason wire.CancelReason
}

// Committed is what [Core.Commit] returns: the committed block, what the
// driver must send for it, and the retention its engine may apply.
type Committed struct {
	Block   *chainlog.Block
	Pushes  []Assignment
	Cancels []Cancel
	// RetainHeight is Config.RetainHeight's answer for the block: the
	// lowest height whose block must be kept (0: keep everything; never
	// above the block's height).
	RetainHeight uint64
}

// Commit commits the applied block's state, advances the mempool and the
// job tracker (events stamped now) and returns the block's pushes and
// cancels. A failed state commit puts the core into the failed state.
func (c *Core) Commit(now time.Time) (*Committed, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if !c.applied {
		return nil, fmt.Errorf("%w: commit without an applied block", ErrOutOfOrder)
	}
	b := c.open
	if err := c.x.Commit(); err != nil {
		c.err = failed(fmt.Sprintf("state commit of block %d", b.Height), err)
		return nil, c.err
	}
	c.open, c.applied, c.drawn = nil, false, nil
	res := c.advance(b, now, c.presentAt(b))
	if f := c.cfg.RetainHeight; f != nil {
		res.RetainHeight = min(f(uint64(b.Height)), uint64(b.Height))
	}
	return res, nil
}

// advance moves the core past committed block b (Commit and Restore):
// registry indices, the mempool, the job tracker (events stamped at), the
// mempool's included submits, and ended jobs past their retention.
func (c *Core) advance(b *chainlog.Block, at time.Time, present func(cip11.Address) bool) *Committed {
	h := uint64(b.Height)
	c.last = b
	c.stats.Blocks++
	for _, op := range b.Registry {
		if _, ok := c.runnerIdx[op.Address]; op.Op == chainlog.OpRegister && !ok {
			c.runnerIdx[op.Address] = len(c.runnerIdx)
			c.runnerAt = append(c.runnerAt, op.Address)
		}
	}
	c.mem.committed(h)
	c.pruneMempool(b)
	c.countCertificates(b)
	res := c.observe(b, at, present)
	c.dropIncluded()
	c.retire(h)
	return res
}

// MarkApplied stamps the time the driver finished committing res's block:
// push latency (§10.1 → §10.2) is measured from it.
func (c *Core) MarkApplied(res *Committed, at time.Time) {
	for _, a := range res.Pushes {
		if t := c.jobs[a.JobID]; t != nil {
			t.appliedAt = at
		}
	}
}

// presentAt is the present set block b carried (first-draw telemetry).
func (c *Core) presentAt(b *chainlog.Block) func(cip11.Address) bool {
	none := func(cip11.Address) bool { return false }
	h := uint64(b.Height)
	if b.Presence == nil || len(*b.Presence) == 0 || h < 2 {
		return none
	}
	prev, err := c.x.Store().Registry().At(h - 1)
	if err != nil {
		return none
	}
	bp, err := presence.ResolveBlockPresence(c.p, false, *b.Presence, len(prev.ActiveRunners()))
	if err != nil {
		return none
	}
	pv, err := presence.NewView(bp.Present, prev)
	if err != nil {
		return none
	}
	return pv.IsPresent
}
