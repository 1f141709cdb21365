package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection"
	"github.com/cip11/cip11/state"
)

// finality is the §9.2 condition-1 oracle of one block: every height up to
// upTo is finalized and applied, or none when !any.
type finality struct {
	any  bool
	upTo uint64
}

// Finalized implements selection.Finality.
func (f *finality) Finalized(h uint64) bool { return f.any && h <= f.upTo }

// executor is a fresh CIP-11 state driven block by block from a chain log:
// the selection engine over in-memory stores, plus the end-of-block writes
// the log carries (registry changes, heartbeats, MRU results).
type executor struct {
	params  cip11.Params
	reg     *state.MemRegistry
	order   []cip11.Address // ACTIVE_RUNNERS_KEY, append order
	pending *selection.MemPendingStore
	mruKV   mru.MemKV
	fin     *finality
	eng     *selection.Engine

	listLen  int        // len(order) when listHash was computed
	listHash cip11.Hash // keccak256 of order
}

// newExecutor builds the engine a header describes, over empty state.
func newExecutor(h chainlog.Header) (*executor, error) {
	cfg := state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
	keys := selection.NewMemThresholdKeys(h.Namespace)
	for _, k := range h.ThresholdKeys {
		if err := keys.Set(uint64(k.Epoch), k.PublicKey[:]); err != nil {
			return nil, fmt.Errorf("header: threshold key of epoch %d: %w", k.Epoch, err)
		}
	}
	x := &executor{
		params:  h.Params,
		reg:     state.NewMemRegistry(cfg),
		pending: selection.NewMemPendingStore(),
		mruKV:   mru.MemKV{},
		fin:     &finality{},
	}
	sched := seed.FixedSchedule{
		ViewsPerEpoch: uint64(h.Schedule.ViewsPerEpoch), FirstView: uint64(h.Schedule.FirstView),
		LastKnownEpoch: uint64(h.Schedule.LastKnownEpoch),
	}
	x.eng = &selection.Engine{
		Config: selection.Config{
			Params: h.Params, MultiValidator: h.MultiValidator, EffectiveK: h.EffectiveK,
			GenesisBeacon: beaconFrom(h.GenesisBeacon),
		},
		Registry: x.reg,
		Jobs:     selection.NewMemJobStore(),
		Pending:  x.pending,
		Finality: x.fin,
		Keys:     keys,
		Advance:  sched.Advance,
		MRU:      selection.NewMRUSource(mru.KVStore{KV: x.mruKV}, h.Params),
		Presence: selection.NewPresenceSource(h.Params),
	}
	return x, nil
}

func beaconFrom(b *chainlog.Beacon) *seed.Beacon {
	if b == nil {
		return nil
	}
	return &seed.Beacon{Round: seed.Round{Epoch: uint64(b.Epoch), View: uint64(b.View)}, Signature: seed.Signature(b.Signature)}
}

// step executes block b on the state and returns what it produced: first
// the engine's §9.2 pass (which selects from the registry as stored at the
// end of b−1), then the block's registry changes, heartbeats and verified
// results, then the state digest.
func (x *executor) step(b *chainlog.Block) (chainlog.Output, error) {
	h := uint64(b.Height)
	blk := selection.Block{
		Height:        h,
		ProposalRound: seed.Round{Epoch: uint64(b.Round.Epoch), View: uint64(b.Round.View)},
		ParentBeacon:  beaconFrom(b.ParentBeacon),
		ConsumedSeeds: b.ConsumedSeeds,
	}
	if b.Presence != nil {
		blk.PresenceInput = *b.Presence
	}
	for _, s := range b.Submits {
		blk.Submits = append(blk.Submits, selection.Job{
			JobID: s.JobID, Submitter: cip11.Address(s.Submitter), Kind: mru.JobKind(s.JobKind),
			CommitteeSize: s.CommitteeSize, TimeoutBlocks: uint64(s.TimeoutBlocks),
		})
	}
	x.fin.any = b.Finalized != nil
	if b.Finalized != nil {
		x.fin.upTo = uint64(*b.Finalized)
	}
	res, err := x.eng.ExecuteBlock(blk)
	if err != nil {
		return chainlog.Output{}, fmt.Errorf("execute: %w", err)
	}
	out := chainlog.Output{
		Assignments:     make([]chainlog.Assignment, 0, len(res.Assignments)),
		PendingWritten:  make([]chainlog.Bytes, 0, len(res.PendingWritten)),
		PendingConsumed: make([]chainlog.Hash, 0, len(res.PendingConsumed)),
		MRUWrites:       []chainlog.MRUWrite{},
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
	if err := x.applyRegistry(h, b); err != nil {
		return chainlog.Output{}, err
	}
	if out.MRUWrites, err = x.applyResults(h, b.Results); err != nil {
		return chainlog.Output{}, err
	}
	out.StateDigest = chainlog.Hash(x.digest())
	return out, nil
}

func assignmentOut(a selection.Assignment) chainlog.Assignment {
	c := make([]chainlog.Address, len(a.Committee))
	for i, addr := range a.Committee {
		c[i] = chainlog.Address(addr)
	}
	return chainlog.Assignment{
		JobID: a.JobID, SubmittedAt: chainlog.U64(a.SubmittedAt), AssignmentHeight: chainlog.U64(a.AssignmentHeight),
		DeadlineBlock: chainlog.U64(a.DeadlineBlock), Mode: uint8(a.Mode), Branch: a.Branch.String(),
		Seed: chainlog.Hash(a.Seed), Committee: c,
	}
}

// applyRegistry writes the block's registry ops in order, then its
// heartbeats, all at height h.
func (x *executor) applyRegistry(h uint64, b *chainlog.Block) error {
	for i, op := range b.Registry {
		if err := x.applyOp(h, op); err != nil {
			return fmt.Errorf("registry[%d] %s %x: %w", i, op.Op, op.Address, err)
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

func (x *executor) applyOp(h uint64, op chainlog.RegistryOp) error {
	addr := cip11.Address(op.Address)
	r := state.Runner{Address: addr, Health: state.Healthy, LastHeartbeat: h}
	if op.Op == chainlog.OpUpdate {
		var ok bool
		if r, ok = x.reg.Latest(addr); !ok {
			return state.ErrNotRegistered
		}
	}
	if op.Health != nil {
		r.Health = state.Health(*op.Health)
	}
	if op.Stake != nil {
		r.Stake = cip11.U128(*op.Stake)
	}
	if op.DelegatedActive != nil {
		r.DelegatedActive = cip11.U128(*op.DelegatedActive)
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
	if err := x.reg.Register(h, r); err != nil {
		return err
	}
	x.order = append(x.order, addr)
	return nil
}

// applyResults runs the §9.4 write path for each verified result in order.
func (x *executor) applyResults(h uint64, results []chainlog.Result) ([]chainlog.MRUWrite, error) {
	store := mru.KVStore{KV: x.mruKV}
	writes := []chainlog.MRUWrite{}
	for i, r := range results {
		o := mru.Outcome{
			Committee: addrs(r.Committee), Matching: addrs(r.Matching),
			RunnersToSlash: addrs(r.RunnersToSlash), RunnersUnrewarded: addrs(r.RunnersUnrewarded),
		}
		rec, ok, err := mru.RecordResult(store, x.params, cip11.Address(r.Submitter), mru.JobKind(r.JobKind), o, h)
		if err != nil {
			return nil, fmt.Errorf("results[%d]: %w", i, err)
		}
		if ok {
			writes = append(writes, chainlog.MRUWrite{
				Submitter: r.Submitter, JobKind: r.JobKind, Runner: chainlog.Address(rec.Runner), SetAtBlock: chainlog.U64(rec.SetAt),
			})
		}
	}
	return writes, nil
}

func addrs(in []chainlog.Address) []cip11.Address {
	out := make([]cip11.Address, len(in))
	for i, a := range in {
		out[i] = cip11.Address(a)
	}
	return out
}

// digestDomain prefixes the state digest preimage (docs/chainlog.md).
const digestDomain = "cip11-chainlog/state-digest/v1"

// digest is the state digest of docs/chainlog.md: keccak256 over the live
// pending records in due-round key order, the MRU records in D15 key order
// and the ACTIVE_RUNNERS_KEY list.
func (x *executor) digest() cip11.Hash {
	buf := []byte(digestDomain)
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
	keys := make([]string, 0, len(x.mruKV))
	for k := range x.mruKV {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) })
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(keys)))
	for _, k := range keys {
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
