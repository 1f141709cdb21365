package blockexec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// Options tune an [Executor]; the zero value is the plain, cache-less one
// over in-memory state.
type Options struct {
	// SnapshotCache is engine.Config.SnapshotCache: the non-consensus
	// block-S candidate cache (§9.2). Digests are identical with and
	// without it.
	SnapshotCache int
	// OpenStore, if non-nil, returns the chain state to run on (for
	// example an adapters/pebble store); nil is a fresh store.Mem. The
	// store must use the header's reputation configuration; it may hold
	// committed blocks, and the executor then continues after them
	// ([Executor.LastCommitted]; replay.Run resumes there).
	OpenStore func(chainlog.Header) (store.Store, error)
	// Reconfigurations are the in-band reconfigurations the store's
	// committed blocks carried, in order (Executor.Reconfigurations of the
	// executor that committed them; a node rebuilds them from its block
	// log): they extend the header's schedule as they did then.
	Reconfigurations []chainlog.Reconfigure
}

// ErrStoreMismatch marks a store that cannot hold this log's state: its
// reputation configuration differs from the header's, or it has committed
// blocks the log does not reach.
var ErrStoreMismatch = errors.New("blockexec: store does not match the log")

// Executor is a CIP-11 state driven block by block from a chain log: the
// block engine over a [store.Store], plus the end-of-block writes the log
// carries (registry changes, heartbeats), one atomic store batch per
// block.
type Executor struct {
	params cip11.Params
	cfg    state.ReputationConfig
	s      store.Store
	pre    *preVerified
	eng    *engine.Engine
	modeA  *modeA // §8.3 machinery; nil when the header has none

	order     []cip11.Address // ACTIVE_RUNNERS_KEY, append order (mirror of the store's)
	cfgOK     bool            // the store's reputation configuration was checked
	open      bool            // a block batch is open
	openLen   int             // len(order) when the open batch began
	lastH     uint64          // last committed height, if hasLast
	hasLast   bool
	listLen   int        // len(order) when listHash was computed
	listHash  cip11.Hash // keccak256 of order
	digestBuf []byte
	// modeASection is the digest's Mode-A section as last computed, valid
	// while modeAValid (appendModeA).
	modeASection []byte
	modeAValid   bool

	// The schedule (reconfig.go): hdr is the header extended by the
	// committed reconfigurations, adv its advance_round; staged is the open
	// block's reconfiguration and stagedKey its group key.
	hdr        chainlog.Header
	adv        seed.AdvanceRound
	reconfs    []chainlog.Reconfigure
	reconfHash cip11.Hash
	staged     *chainlog.Reconfigure
	stagedKey  *seed.Verifier
}

// New builds the engine a header describes, over o.OpenStore's store
// (default: empty in-memory state).
func New(h chainlog.Header, o Options) (*Executor, error) {
	cfg := state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
	keys := seed.MemoryThresholdKeys{}
	for _, k := range h.ThresholdKeys {
		v, err := seed.NewVerifier(k.PublicKey[:], h.Namespace)
		if err != nil {
			return nil, fmt.Errorf("header: threshold key of epoch %d: %w", k.Epoch, err)
		}
		keys[uint64(k.Epoch)] = v
	}
	ma, err := newModeA(h)
	if err != nil {
		return nil, fmt.Errorf("header: Mode A: %w", err)
	}
	var st store.Store = store.NewMemConfig(cfg)
	if o.OpenStore != nil {
		if st, err = o.OpenStore(h); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	h.ThresholdKeys, h.Validators = slices.Clone(h.ThresholdKeys), slices.Clone(h.Validators)
	h.Schedule.Activations = slices.Clone(h.Schedule.Activations)
	x := &Executor{params: h.Params, cfg: cfg, s: st, pre: newPreVerified(keys), modeA: ma, hdr: h, adv: Advance(h.Schedule)}
	for i := range o.Reconfigurations {
		if err := x.RestoreReconfiguration(&o.Reconfigurations[i]); err != nil {
			st.Close()
			return nil, fmt.Errorf("reconfigurations[%d]: %w", i, err)
		}
	}
	last, ok, err := st.LastCommitted()
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if x.lastH, x.hasLast = last, ok; ok {
		v, err := st.Registry().At(last)
		if err != nil {
			return nil, fmt.Errorf("open store: registry at %d: %w", last, err)
		}
		if v.ReputationConfig() != cfg {
			return nil, fmt.Errorf("%w: reputation configuration %+v, header has %+v", ErrStoreMismatch, v.ReputationConfig(), cfg)
		}
		x.order, x.cfgOK = slices.Clone(v.ActiveRunners()), true
	}
	eng, err := engine.New(engine.Config{
		Params: h.Params, GenesisBeacon: beaconFrom(h.GenesisBeacon),
		Registry: st.Registry(), Validators: x, Jobs: st.Jobs(), Pending: st.Pending(),
		Keys: x.pre, Advance: func(r seed.Round, k uint64) (seed.Round, bool, error) { return x.adv(r, k) }, MRU: st.MRU(),
		Presence: presenceSource(h.Params, st), SnapshotCache: o.SnapshotCache, Root: new(rootHasher).root,
	})
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	x.eng = eng
	return x, nil
}

// ParticipantsAt implements engine.Validators: the D25 set size at height
// h under the schedule including committed reconfigurations.
func (x *Executor) ParticipantsAt(h uint64) (int, error) { return x.hdr.ParticipantsAt(h) }

// LastCommitted is the height of the last block the executor's store
// committed (ok false for an empty store).
func (x *Executor) LastCommitted() (h uint64, ok bool) { return x.lastH, x.hasLast }

// Close discards an open block and closes the store.
func (x *Executor) Close() error {
	x.discard()
	return x.s.Close()
}

func beaconFrom(b *chainlog.Beacon) *seed.Beacon {
	if b == nil {
		return nil
	}
	return &seed.Beacon{Round: seed.Round{Epoch: uint64(b.Epoch), View: uint64(b.View)}, Signature: seed.Signature(b.Signature)}
}

// Step executes block b on the state, commits it and returns what it
// produced: first the engine (which selects from the registry as stored at
// the end of b−1, then runs the block's transactions in order), then the
// block's registry changes and heartbeats, then the state digest. An
// invalid block is discarded: the store stays at the previous block.
func (x *Executor) Step(b *chainlog.Block) (chainlog.Output, error) {
	out, err := x.execute(b)
	if err != nil {
		return out, err
	}
	return out, x.commit()
}

// execute runs block b in a new store batch and leaves the batch open for
// [Executor.commit] or [Executor.discard]; on error it is discarded.
func (x *Executor) execute(b *chainlog.Block) (out chainlog.Output, err error) {
	h := uint64(b.Height)
	if err := x.s.Begin(h); err != nil {
		return out, err
	}
	x.open, x.openLen = true, len(x.order)
	defer func() {
		if err != nil {
			x.discard()
		}
	}()
	if !x.cfgOK {
		v, err := x.s.Registry().At(h)
		if err != nil {
			return out, err
		}
		if v.ReputationConfig() != x.cfg {
			return out, fmt.Errorf("%w: reputation configuration %+v, header has %+v", ErrStoreMismatch, v.ReputationConfig(), x.cfg)
		}
		x.cfgOK = true
	}
	if err := x.checkRounds(h, b); err != nil {
		return out, err
	}
	res, err := x.eng.ExecuteBlock(engineBlock(b))
	if err != nil {
		return out, err
	}
	out = chainlog.Output{
		Assignments:     make([]chainlog.Assignment, 0, len(res.Assignments)),
		PendingWritten:  make([]chainlog.Bytes, 0, len(res.PendingWritten)),
		PendingConsumed: make([]cip11.Hash, 0, len(res.PendingConsumed)),
		Expired:         make([]cip11.Hash, 0, len(res.Expired)),
		MRUWrites:       make([]chainlog.MRUWrite, 0, len(res.MRUWrites)),
	}
	for _, a := range res.Assignments {
		out.Assignments = append(out.Assignments, assignmentOut(a))
	}
	for _, r := range res.PendingWritten {
		out.PendingWritten = append(out.PendingWritten, r.Encode())
	}
	for _, id := range res.PendingConsumed {
		out.PendingConsumed = append(out.PendingConsumed, id)
	}
	for _, id := range res.Expired {
		out.Expired = append(out.Expired, id)
	}
	for _, w := range res.MRUWrites {
		out.MRUWrites = append(out.MRUWrites, chainlog.MRUWrite{Submitter: w.Submitter, JobKind: uint8(w.Kind),
			Runner: w.Record.Runner, SetAtBlock: chainlog.U64(w.Record.SetAt)})
	}
	if err := x.applyRegistry(h, b); err != nil {
		return out, err
	}
	if out.Certificates, err = x.certificates(h, b); err != nil {
		return out, err
	}
	if err := x.reconfigure(h, b); err != nil {
		return out, err
	}
	if out.StateDigest, err = x.Digest(); err != nil {
		return out, err
	}
	return out, nil
}

func (x *Executor) commit() error {
	if err := x.s.Commit(); err != nil {
		x.discard()
		return fmt.Errorf("commit: %w", err)
	}
	h, ok, err := x.s.LastCommitted()
	if err != nil || !ok {
		return fmt.Errorf("commit: last committed height: %v", err)
	}
	x.open, x.lastH, x.hasLast = false, h, true
	if r := x.staged; r != nil {
		x.staged = nil
		if err := x.applyReconfigure(r, x.stagedKey); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	return nil
}

// discard drops the open block: its store batch, and its registrations
// from the ACTIVE_RUNNERS_KEY mirror (and the list hash if it covered them).
func (x *Executor) discard() {
	x.modeAValid = false // it may have covered the discarded block's certificates
	x.staged, x.stagedKey = nil, nil
	if x.open {
		x.s.Discard()
		x.open = false
		x.order = x.order[:x.openLen]
		if x.listLen > x.openLen {
			x.listLen = 0
		}
	}
}

// engineBlock is the engine's view of a chain-log block.
func engineBlock(b *chainlog.Block) engine.Block {
	blk := engine.Block{
		Height:        uint64(b.Height),
		ProposalRound: seed.Round{Epoch: uint64(b.Round.Epoch), View: uint64(b.Round.View)},
		ParentBeacon:  beaconFrom(b.ParentBeacon),
		ConsumedSeeds: b.ConsumedSeeds,
		Txs:           make([]engine.Tx, 0, len(b.Txs)),
	}
	if b.Finalized != nil {
		f := uint64(*b.Finalized)
		blk.Finalized = &f
	}
	if b.Presence != nil {
		blk.PresenceInput = *b.Presence
	}
	for _, tx := range b.Txs {
		switch {
		case tx.Submit != nil:
			s := tx.Submit
			blk.Txs = append(blk.Txs, engine.Submit{Job: engine.Job{JobID: s.JobID, Submitter: s.Submitter,
				Kind: mru.JobKind(s.JobKind), CommitteeSize: s.CommitteeSize, TimeoutBlocks: uint64(s.TimeoutBlocks)}})
		case tx.ResultSubmit != nil:
			blk.Txs = append(blk.Txs, engine.ResultSubmit{JobID: tx.ResultSubmit.JobID, Runner: tx.ResultSubmit.Runner})
		case tx.Verified != nil:
			v := tx.Verified
			blk.Txs = append(blk.Txs, engine.Verified{JobID: v.JobID, Matching: v.Matching,
				RunnersToSlash: v.RunnersToSlash, RunnersUnrewarded: v.RunnersUnrewarded})
		}
	}
	return blk
}

func assignmentOut(a engine.Assignment) chainlog.Assignment {
	return chainlog.Assignment{
		JobID: a.JobID, SubmittedAt: chainlog.U64(a.SubmittedAt), AssignmentHeight: chainlog.U64(a.AssignmentHeight),
		DeadlineBlock: chainlog.U64(a.DeadlineBlock), Mode: uint8(a.Mode), Branch: a.Branch.String(),
		Seed: a.Seed, Committee: slices.Clone(a.Committee), Reselection: a.Reselection,
	}
}

// applyRegistry writes the block's registry ops in order, then its
// heartbeats, all at height h.
func (x *Executor) applyRegistry(h uint64, b *chainlog.Block) error {
	for i, op := range b.Registry {
		if err := x.applyOp(h, op); err != nil {
			return fmt.Errorf("registry[%d] %s %s: %w", i, op.Op, op.Address, err)
		}
	}
	w := x.s.Registrar()
	for i, idx := range b.Heartbeats {
		if int(idx) >= len(x.order) {
			return fmt.Errorf("heartbeats[%d]: %w: index %d beyond %d runners", i, chainlog.ErrMalformed, idx, len(x.order))
		}
		r, ok, err := w.Latest(x.order[idx])
		if err != nil {
			return fmt.Errorf("heartbeats[%d]: %w", i, err)
		}
		if !ok {
			return fmt.Errorf("heartbeats[%d]: %w: %s", i, state.ErrNotRegistered, x.order[idx])
		}
		r.LastHeartbeat = h
		if err := w.Update(r); err != nil {
			return fmt.Errorf("heartbeats[%d]: %w", i, err)
		}
	}
	return nil
}

func (x *Executor) applyOp(h uint64, op chainlog.RegistryOp) error {
	w := x.s.Registrar()
	r := state.Runner{Address: op.Address, Health: state.Healthy, LastHeartbeat: h}
	prev, exists, err := w.Latest(op.Address)
	if err != nil {
		return err
	}
	if op.Op == chainlog.OpUpdate {
		if !exists {
			return state.ErrNotRegistered
		}
		r = prev
	}
	if op.Health != nil {
		r.Health = state.Health(*op.Health)
	}
	if op.Stake != nil {
		r.Stake = *op.Stake
	}
	if op.DelegatedActive != nil {
		r.DelegatedActive = *op.DelegatedActive
	}
	if op.ReputationX1e9 != nil {
		r.ReputationX1e9 = uint64(*op.ReputationX1e9)
	}
	if op.LastHeartbeat != nil {
		r.LastHeartbeat = uint64(*op.LastHeartbeat)
	}
	if op.Op == chainlog.OpUpdate {
		return w.Update(r)
	}
	if exists {
		return state.ErrAlreadyRegistered // the context names the runner
	}
	if err := w.Register(r); err != nil {
		return err
	}
	x.order = append(x.order, op.Address)
	return nil
}

// DigestDomain prefixes the state digest preimage (docs/chainlog.md).
const DigestDomain = "cip11-chainlog/state-digest/v2"

// encodedJobs is an optional store fast path: the stored encoding of a
// job record (store.Mem has it), saving a decode and re-encode per live
// job per block.
type encodedJobs interface {
	EncodedJob(id [32]byte) []byte
}

// Digest is the normative state digest of docs/chainlog.md over the
// executor's store, including an open block's writes: keccak256 over the
// live pending records in due-round key order, the live (pending or
// assigned) job records in job_id order, the MRU records in D15 key order
// and the ACTIVE_RUNNERS_KEY list.
func (x *Executor) Digest() (cip11.Hash, error) {
	buf := append(x.digestBuf[:0], DigestDomain...)
	pend, err := x.s.PendingRecords()
	if err != nil {
		return cip11.Hash{}, fmt.Errorf("digest: %w", err)
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(pend)))
	for _, r := range pend {
		enc := r.Encode()
		buf = append(buf, engine.PendingDueRoundKey(r)...)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(enc)))
		buf = append(buf, enc...)
	}
	live, err := x.s.LiveJobs()
	if err != nil {
		return cip11.Hash{}, fmt.Errorf("digest: %w", err)
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(live)))
	fast, _ := x.s.(encodedJobs)
	for _, id := range live {
		var enc []byte
		if fast != nil {
			enc = fast.EncodedJob(id)
		}
		if enc == nil {
			r, ok, err := x.s.Jobs().Job(id)
			if err != nil || !ok {
				return cip11.Hash{}, fmt.Errorf("digest: live job %x: %w (found %v)", id, err, ok)
			}
			enc = r.Encode()
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(enc)))
		buf = append(buf, enc...)
	}
	recs, err := x.s.MRURecords()
	if err != nil {
		return cip11.Hash{}, fmt.Errorf("digest: %w", err)
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(recs)))
	for _, e := range recs {
		k := mru.Key(e.Submitter, e.Kind)
		rec := e.Record.Encode()
		buf = append(append(buf, k[:]...), rec[:]...)
	}
	if x.listLen != len(x.order) || x.listLen == 0 {
		flat := make([]byte, 0, 20*len(x.order))
		for _, a := range x.order {
			flat = append(flat, a[:]...)
		}
		x.listHash, x.listLen = cip11.Keccak256(flat), len(x.order)
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(x.order)))
	buf = append(buf, x.listHash[:]...)
	if buf, err = x.appendModeA(buf); err != nil {
		return cip11.Hash{}, fmt.Errorf("digest: %w", err)
	}
	buf = x.appendReconfig(buf)
	x.digestBuf = buf
	return cip11.Keccak256(buf), nil
}

// Execute runs block b in a new store batch and leaves the batch open: the
// caller makes the block durable elsewhere (a node appends it to its block
// log) and then calls [Executor.Commit], or [Executor.Discard]. On error
// the batch is already discarded. [Executor.Step] is Execute then Commit.
func (x *Executor) Execute(b *chainlog.Block) (chainlog.Output, error) { return x.execute(b) }

// Commit commits the block [Executor.Execute] left open.
func (x *Executor) Commit() error {
	if !x.open {
		return store.ErrNoBatch
	}
	return x.commit()
}

// Discard drops the block [Executor.Execute] left open (a no-op without one).
func (x *Executor) Discard() { x.discard() }

// VerifyAhead checks block b's parent beacon and consumed seeds as
// [Executor.Execute] will, and remembers the answers, so that a reader
// goroutine can make the BLS pairings on another core ahead of execution.
// It is safe to call concurrently with the executor's other methods;
// undecodable or keyless inputs are left to Execute, which reports them.
func (x *Executor) VerifyAhead(b *chainlog.Block) { x.pre.ahead(b) }

// Store is the executor's chain state. Reads must not race with a block
// in progress.
func (x *Executor) Store() store.Store { return x.s }

// Advance is the advance_round a header's schedule describes (D13, D30):
// seed.HeightSchedule when it lists activations, seed.FixedSchedule
// otherwise.
func Advance(s chainlog.Schedule) seed.AdvanceRound {
	if s.Height() {
		return heightSchedule(s).Advance
	}
	return seed.FixedSchedule{ViewsPerEpoch: uint64(s.ViewsPerEpoch), FirstView: uint64(s.FirstView), LastKnownEpoch: uint64(s.LastKnownEpoch)}.Advance
}
