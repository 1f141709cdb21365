package replay

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
)

// Options tune an [Executor]; the zero value is the plain, cache-less one.
type Options struct {
	// SnapshotCache is engine.Config.SnapshotCache: the non-consensus
	// block-S candidate cache (§9.2). Digests are identical with and
	// without it.
	SnapshotCache int
}

// Executor is a fresh CIP-11 state driven block by block from a chain log:
// the block engine over in-memory stores, plus the end-of-block writes the
// log carries (registry changes, heartbeats).
type Executor struct {
	params  cip11.Params
	reg     *state.MemRegistry
	order   []cip11.Address // ACTIVE_RUNNERS_KEY, append order
	pending *engine.MemPendingStore
	jobs    *engine.MemJobStore
	mruKV   mru.MemKV
	mruKeys []string // the keys of mruKV, ascending (records are never deleted)
	pre     *preVerified
	eng     *engine.Engine

	listLen  int        // len(order) when listHash was computed
	listHash cip11.Hash // keccak256 of order
}

// NewExecutor builds the engine a header describes, over empty state.
func NewExecutor(h chainlog.Header, o Options) (*Executor, error) {
	cfg := state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
	keys := seed.MemoryThresholdKeys{}
	for _, k := range h.ThresholdKeys {
		v, err := seed.NewVerifier(k.PublicKey[:], h.Namespace)
		if err != nil {
			return nil, fmt.Errorf("header: threshold key of epoch %d: %w", k.Epoch, err)
		}
		keys[uint64(k.Epoch)] = v
	}
	x := &Executor{
		params:  h.Params,
		reg:     state.NewMemRegistry(cfg),
		pending: engine.NewMemPendingStore(),
		jobs:    engine.NewMemJobStore(),
		mruKV:   mru.MemKV{},
		pre:     newPreVerified(keys),
	}
	sched := seed.FixedSchedule{
		ViewsPerEpoch: uint64(h.Schedule.ViewsPerEpoch), FirstView: uint64(h.Schedule.FirstView),
		LastKnownEpoch: uint64(h.Schedule.LastKnownEpoch),
	}
	eng, err := engine.New(engine.Config{
		Params: h.Params, GenesisBeacon: beaconFrom(h.GenesisBeacon),
		Registry: x.reg, Validators: h, Jobs: x.jobs, Pending: x.pending,
		Keys: x.pre, Advance: sched.Advance, MRU: mru.KVStore{KV: x.mruKV},
		Presence: presence.NewPresenceSource(h.Params), SnapshotCache: o.SnapshotCache, Root: new(rootHasher).root,
	})
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	x.eng = eng
	return x, nil
}

func beaconFrom(b *chainlog.Beacon) *seed.Beacon {
	if b == nil {
		return nil
	}
	return &seed.Beacon{Round: seed.Round{Epoch: uint64(b.Epoch), View: uint64(b.View)}, Signature: seed.Signature(b.Signature)}
}

// Step executes block b on the state and returns what it produced: first
// the engine (which selects from the registry as stored at the end of
// b−1, then runs the block's transactions in order), then the block's
// registry changes and heartbeats, then the state digest.
func (x *Executor) Step(b *chainlog.Block) (chainlog.Output, error) {
	h := uint64(b.Height)
	res, err := x.eng.ExecuteBlock(engineBlock(b))
	if err != nil {
		return chainlog.Output{}, err
	}
	out := chainlog.Output{
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
		k := mru.Key(w.Submitter, w.Kind)
		if i, found := slices.BinarySearch(x.mruKeys, string(k[:])); !found {
			x.mruKeys = slices.Insert(x.mruKeys, i, string(k[:]))
		}
		out.MRUWrites = append(out.MRUWrites, chainlog.MRUWrite{Submitter: w.Submitter, JobKind: uint8(w.Kind),
			Runner: w.Record.Runner, SetAtBlock: chainlog.U64(w.Record.SetAt)})
	}
	if err := x.applyRegistry(h, b); err != nil {
		return chainlog.Output{}, err
	}
	out.StateDigest = x.Digest()
	return out, nil
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
	for i, idx := range b.Heartbeats {
		if int(idx) >= len(x.order) {
			return fmt.Errorf("heartbeats[%d]: %w: index %d beyond %d runners", i, chainlog.ErrMalformed, idx, len(x.order))
		}
		r, _ := x.reg.Latest(x.order[idx])
		r.LastHeartbeat = h
		if err := x.reg.Update(h, r); err != nil {
			return fmt.Errorf("heartbeats[%d]: %w", i, err)
		}
	}
	return nil
}

func (x *Executor) applyOp(h uint64, op chainlog.RegistryOp) error {
	r := state.Runner{Address: op.Address, Health: state.Healthy, LastHeartbeat: h}
	if op.Op == chainlog.OpUpdate {
		var ok bool
		if r, ok = x.reg.Latest(op.Address); !ok {
			return state.ErrNotRegistered
		}
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
		return x.reg.Update(h, r)
	}
	if _, ok := x.reg.Latest(op.Address); ok {
		return state.ErrAlreadyRegistered // the context names the runner
	}
	if err := x.reg.Register(h, r); err != nil {
		return err
	}
	x.order = append(x.order, op.Address)
	return nil
}

// DigestDomain prefixes the state digest preimage (docs/chainlog.md).
const DigestDomain = "cip11-chainlog/state-digest/v2"

// Digest is the normative state digest of docs/chainlog.md: keccak256
// over the live pending records in due-round key order, the live (pending
// or assigned) job records in job_id order, the MRU records in D15 key order and the
// ACTIVE_RUNNERS_KEY list.
func (x *Executor) Digest() cip11.Hash {
	buf := []byte(DigestDomain)
	due := x.pending.DueKeys()
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(due)))
	for _, k := range due {
		var id [32]byte
		copy(id[:], k[len(k)-32:])
		r, _, _ := x.pending.Get(id)
		enc := r.Encode()
		buf = append(buf, k...)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(enc)))
		buf = append(buf, enc...)
	}
	live := x.jobs.Live()
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(live)))
	for _, id := range live {
		enc := x.jobs.Encoded(id)
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(enc)))
		buf = append(buf, enc...)
	}
	if len(x.mruKeys) != len(x.mruKV) { // a write not reported as an MRUWrite: re-list
		x.mruKeys = slices.Sorted(maps.Keys(x.mruKV))
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(x.mruKeys)))
	for _, k := range x.mruKeys {
		buf = append(append(buf, k...), x.mruKV[k]...)
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
	return cip11.Keccak256(buf)
}
