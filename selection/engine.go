package selection

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
)

// Job is what a JobSubmit fixes for selection (§9.2): job_id, the
// submitter and job_kind (the §9.4 MRU key), M = verification.runners and
// timeout_blocks (the §10.1 deadline rule).
type Job struct {
	JobID         [32]byte
	Submitter     cip11.Address
	Kind          mru.JobKind // §9.4 job_kind byte
	CommitteeSize uint32
	TimeoutBlocks uint64
}

// JobStore keeps the job records the pending pass needs (submitter, kind,
// timeout) after block S. The node owns job records; MemJobStore is the
// in-memory implementation.
type JobStore interface {
	Job(id [32]byte) (Job, bool, error)
	PutJob(j Job) error
}

// Finality answers §9.2 condition 1: is block S finalized and applied to
// canonical local state?
type Finality interface {
	Finalized(height uint64) bool
}

// MRUSource is §9.3 lookup_mru at the assignment read point h, including the
// §9.4 MRU_ACTIVATION_HEIGHT gate and the TTL.
type MRUSource interface {
	LookupMRU(submitter cip11.Address, kind mru.JobKind, h uint64) (cip11.Address, bool, error)
}

// PresenceSource resolves PresenceInput(H) (§7.2) into a membership test.
// live is the set selection uses; shadow is non-nil only for
// CIP11_PRESENCE_SHADOW_ENABLED telemetry while present-first is off. An
// error makes the block invalid (§7.2 rule 2).
type PresenceSource interface {
	Resolve(h uint64, field []byte, parent state.RegistryView, modeAEffective bool) (live, shadow func(cip11.Address) bool, err error)
}

// Config is the chain configuration of the engine.
type Config struct {
	Params         cip11.Params
	MultiValidator bool   // n = |V| > 1 (§3.2)
	EffectiveK     uint32 // effective subset size for the §8.4 Mode-A guard
	GenesisBeacon  *seed.Beacon
	// Filters returns the non-floor §9.1 filters bound to a job; nil means
	// the floor alone.
	Filters func(j Job) []Filter
}

// Engine executes the CIP-11 part of a block: the start-of-block pending
// pass, then each JobSubmit in order (§9.2). It holds no state of its own
// beyond its injected stores.
type Engine struct {
	Config   Config
	Registry state.Registry
	Jobs     JobStore
	Pending  PendingStore
	Finality Finality
	Keys     seed.ThresholdKeys
	Advance  seed.AdvanceRound
	MRU      MRUSource
	Presence PresenceSource
}

// Block is the consensus input of one block that CIP-11 execution reads.
type Block struct {
	Height        uint64
	ProposalRound seed.Round   // r_submit for jobs submitted in this block
	ParentBeacon  *seed.Beacon // R_{H−1}; nil only when the parent predates the first certified round
	PresenceInput []byte       // committed PresenceInputV1 bytes; nil when absent
	ConsumedSeeds []byte       // committed ConsumedSeedsV1 bytes
	Submits       []Job        // JobSubmit instructions in transaction order
}

// Assignment is one committee written by a block.
type Assignment struct {
	JobID            [32]byte
	SubmittedAt      uint64
	AssignmentHeight uint64
	DeadlineBlock    uint64
	Mode             seed.Mode
	Branch           Branch
	Seed             cip11.Hash
	Committee        []cip11.Address // draw order
}

// BlockResult is what a block produced.
type BlockResult struct {
	Assignments     []Assignment         // pending pass first, in processing order; then M == 1 in submit order
	PendingWritten  []PendingSelectionV1 // M > 1 records written by this block's submits
	PendingConsumed [][32]byte           // job_ids whose records this block consumed
	Shadow          []Assignment         // shadow present-first draws (telemetry only)
}

// blockCtx caches what is computed once per block.
type blockCtx struct {
	e              *Engine
	b              Block
	modeAEffective bool
	live, shadow   func(cip11.Address) bool
	snapshots      map[uint64]*Snapshot
	pools          map[poolKey]*Pools
	beaconSeed     *cip11.Hash // canonical_seed_bytes of the verified parent beacon
	hasher         seed.Hasher // reused Keccak state: seeds cost no allocation
	out            BlockResult
}

// poolKey identifies pools that can be shared by every job of a block: same
// snapshot height, branch and presence (live or shadow).
type poolKey struct {
	t      uint64
	branch Branch
	shadow bool
}

// ExecuteBlock runs §9.2 for block b. Any returned error means the block is
// invalid or the stores failed; on error the caller must discard the block's
// writes (the engine writes through the stores it was given, so give it a
// batch that commits only on success).
func (e *Engine) ExecuteBlock(b Block) (BlockResult, error) {
	c := &blockCtx{e: e, b: b, snapshots: make(map[uint64]*Snapshot), pools: make(map[poolKey]*Pools)}
	c.modeAEffective = e.Config.Params.ModeAEffective(e.Config.EffectiveK)
	parent, err := e.view(b.Height)
	if err != nil {
		return BlockResult{}, err
	}
	c.live, c.shadow, err = e.Presence.Resolve(b.Height, b.PresenceInput, parent, c.modeAEffective)
	if err != nil {
		return BlockResult{}, fmt.Errorf("block %d: %w", b.Height, err)
	}
	if err := c.pendingPass(); err != nil {
		return BlockResult{}, fmt.Errorf("block %d pending pass: %w", b.Height, err)
	}
	for _, j := range b.Submits {
		if err := c.submit(j); err != nil {
			return BlockResult{}, fmt.Errorf("block %d submit %x: %w", b.Height, j.JobID, err)
		}
	}
	return c.out, nil
}

// view returns the registry that block t selects from: the state at the
// start of block t, i.e. as stored at the end of t−1 (SPEC-NOTES §9.2
// "block-T state"). Block 0 selects from the empty registry.
func (e *Engine) view(t uint64) (state.RegistryView, error) {
	if t == 0 {
		return emptyView{}, nil
	}
	return e.Registry.At(t - 1)
}

func (c *blockCtx) filters(j Job) []Filter {
	if c.e.Config.Filters == nil {
		return nil
	}
	return c.e.Config.Filters(j)
}

func (c *blockCtx) snapshot(t uint64, j Job) (*Snapshot, error) {
	filters := c.filters(j)
	if len(filters) == 0 {
		if s, ok := c.snapshots[t]; ok {
			return s, nil
		}
	}
	v, err := c.e.view(t)
	if err != nil {
		return nil, err
	}
	s, err := BuildSnapshot(v, t, c.e.Config.Params, filters...)
	if err != nil {
		return nil, err
	}
	if len(filters) == 0 {
		c.snapshots[t] = s
	}
	return s, nil
}

func (c *blockCtx) submit(j Job) error {
	if j.CommitteeSize == 0 {
		return fmt.Errorf("%w: M = 0", ErrCommitteeSize)
	}
	if err := c.e.Jobs.PutJob(j); err != nil {
		return err
	}
	if j.CommitteeSize == 1 {
		return c.selectImmediate(j)
	}
	return c.writePending(j)
}

// selectImmediate is M == 1: selection in block S from R_{S−1} (or the
// configured genesis beacon), mode 0x00, T = H = S.
func (c *blockCtx) selectImmediate(j Job) error {
	csb, err := c.parentSeedBytes()
	if err != nil {
		return err
	}
	id := cip11.Hash(j.JobID)
	s, err := c.hasher.SelectionSeed(seed.ModeImmediate, &csb, &id, c.b.Height)
	if err != nil {
		return err
	}
	snap, err := c.snapshot(c.b.Height, j)
	if err != nil {
		return err
	}
	return c.assign(j, snap, s, seed.ModeImmediate, c.b.Height)
}

// parentSeedBytes returns canonical_seed_bytes(R_{S−1}) once per block. The
// parent beacon is verified under its epoch's threshold key before use
// (§9.2); the configured genesis beacon is chain configuration and is
// trusted as such.
func (c *blockCtx) parentSeedBytes() (cip11.Hash, error) {
	if c.beaconSeed != nil {
		return *c.beaconSeed, nil
	}
	beacon, err := seed.ParentBeacon(c.b.ParentBeacon, c.e.Config.GenesisBeacon)
	if err != nil {
		return cip11.Hash{}, err
	}
	if c.b.ParentBeacon != nil {
		v, err := c.e.Keys.KeyForEpoch(beacon.Round.Epoch)
		if err != nil {
			return cip11.Hash{}, fmt.Errorf("%w: %w", ErrParentBeacon, err)
		}
		if err := v.VerifyBeacon(beacon); err != nil {
			return cip11.Hash{}, fmt.Errorf("%w: %w", ErrParentBeacon, err)
		}
	}
	h := c.hasher.BeaconHash(beacon.Round, &beacon.Signature)
	c.beaconSeed = &h
	return h, nil
}

// poolsFor returns the draw pools of job j over snap for branch, shared by
// every job of the block that has no job-specific filters.
func (c *blockCtx) poolsFor(j Job, snap *Snapshot, branch Branch, shadow bool) *Pools {
	isPresent := c.live
	if shadow {
		isPresent = c.shadow
	}
	if len(c.filters(j)) != 0 {
		return NewPools(branch, snap.Eligible(isPresent))
	}
	k := poolKey{snap.T, branch, shadow}
	p, ok := c.pools[k]
	if !ok {
		p = NewPools(branch, snap.Eligible(isPresent))
		c.pools[k] = p
	}
	return p
}

// writePending is M > 1 in block S: fix r_submit, r_seed and the block-S
// root, write both storage keys, assign nothing (§9.2).
func (c *blockCtx) writePending(j Job) error {
	p := c.e.Config.Params
	rSeed, ok, err := seed.SeedRound(c.e.Advance, c.b.ProposalRound, p.SelectionSeedDelayViews)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: advance_round(%v, %d)", ErrSeedRoundUnmappable, c.b.ProposalRound, p.SelectionSeedDelayViews)
	}
	snap, err := c.snapshot(c.b.Height, j)
	if err != nil {
		return err
	}
	r := PendingSelectionV1{
		Version: PendingVersion, JobID: j.JobID,
		SubmittedAt: c.b.Height, SelectionStateHeight: c.b.Height, CommitteeSize: j.CommitteeSize,
		SubmissionEpoch: c.b.ProposalRound.Epoch, SubmissionView: c.b.ProposalRound.View,
		SeedEpoch: rSeed.Epoch, SeedView: rSeed.View, SeedDelayViews: p.SelectionSeedDelayViews,
		CandidatesSnapshotRoot: snap.Root(),
	}
	if err := c.e.Pending.Put(r); err != nil {
		return err
	}
	c.out.PendingWritten = append(c.out.PendingWritten, r)
	return nil
}

type dueRecord struct {
	rec    PendingSelectionV1
	beacon seed.Beacon
}

// pendingPass is the start-of-block §9.2 pass over the committed
// ConsumedSeedsV1: every entry must be consumed by at least one due record
// whose block S is finalized and must verify under its epoch's key; the
// collected records are processed in ascending (submitted_at, job_id).
func (c *blockCtx) pendingPass() error {
	entries, err := seed.DecodeConsumedSeedsV1(c.b.ConsumedSeeds)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConsumedSeeds, err)
	}
	var due []dueRecord
	var processed []seed.Round
	for _, en := range entries {
		recs, err := c.e.Pending.DueAt(en.Round.Epoch, en.Round.View)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if c.e.Finality.Finalized(r.SubmittedAt) {
				due = append(due, dueRecord{r, seed.Beacon(en)})
				processed = append(processed, en.Round)
			}
		}
	}
	if err := seed.ValidateConsumedSeeds(entries, processed, c.e.Keys); err != nil {
		return fmt.Errorf("%w: %w", ErrConsumedSeeds, err)
	}
	slices.SortFunc(due, func(a, b dueRecord) int {
		if a.rec.SubmittedAt != b.rec.SubmittedAt {
			return cmpU64(a.rec.SubmittedAt, b.rec.SubmittedAt)
		}
		return bytes.Compare(a.rec.JobID[:], b.rec.JobID[:])
	})
	for _, d := range due {
		if err := c.assignPending(d.rec, d.beacon); err != nil {
			return err
		}
	}
	return nil
}

// assignPending is the §9.2 successful-assignment transition: (1) a live
// record exists, the seed is exactly the record's round; (2) the block-S
// root re-derives; (3) the committee is drawn and written with assignment
// height H; (4) both keys are deleted.
func (c *blockCtx) assignPending(r PendingSelectionV1, beacon seed.Beacon) error {
	live, ok, err := c.e.Pending.Get(r.JobID)
	if err != nil {
		return err
	}
	if !ok || live != r {
		return fmt.Errorf("%w: job %x", ErrNoLivePending, r.JobID)
	}
	if beacon.Round != (seed.Round{Epoch: r.SeedEpoch, View: r.SeedView}) {
		return fmt.Errorf("%w: job %x", ErrSeedRoundMismatch, r.JobID)
	}
	j, ok, err := c.e.Jobs.Job(r.JobID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: job record %x", ErrNoLivePending, r.JobID)
	}
	snap, err := c.snapshot(r.SelectionStateHeight, j)
	if err != nil {
		return err
	}
	if snap.Root() != r.CandidatesSnapshotRoot {
		return fmt.Errorf("%w: job %x", ErrSnapshotRootMismatch, r.JobID)
	}
	csb, id := c.hasher.BeaconHash(beacon.Round, &beacon.Signature), cip11.Hash(r.JobID)
	s, err := c.hasher.SelectionSeed(seed.ModeDelayed, &csb, &id, r.SubmittedAt)
	if err != nil {
		return err
	}
	if err := c.assign(j, snap, s, seed.ModeDelayed, r.SubmittedAt); err != nil {
		return err
	}
	if err := c.e.Pending.Delete(r); err != nil {
		return err
	}
	c.out.PendingConsumed = append(c.out.PendingConsumed, r.JobID)
	return nil
}

// assign draws the committee for j at assignment height H = this block and
// records it, plus a shadow draw when shadow presence is on.
func (c *blockCtx) assign(j Job, snap *Snapshot, s cip11.Hash, mode seed.Mode, submittedAt uint64) error {
	h := c.b.Height
	var mru *MRU
	if c.e.MRU != nil {
		addr, ok, err := c.e.MRU.LookupMRU(j.Submitter, j.Kind, h)
		if err != nil {
			return err
		}
		if ok {
			mru = &MRU{Address: addr, Multiplier: c.e.Config.Params.MRUWeightMultiplier}
		}
	}
	branch := ChooseBranch(c.modeAEffective, c.e.Config.MultiValidator, j.CommitteeSize)
	a := Assignment{
		JobID: j.JobID, SubmittedAt: submittedAt, AssignmentHeight: h,
		DeadlineBlock: DeadlineBlock(submittedAt, j.TimeoutBlocks),
		Mode:          mode, Branch: branch, Seed: s,
	}
	a.Committee = c.poolsFor(j, snap, branch, false).Draw(s, j.CommitteeSize, mru)
	c.out.Assignments = append(c.out.Assignments, a)
	if c.shadow != nil {
		sh := a
		sh.Branch = ChooseBranch(false, c.e.Config.MultiValidator, j.CommitteeSize)
		sh.Committee = c.poolsFor(j, snap, sh.Branch, true).Draw(s, j.CommitteeSize, mru)
		c.out.Shadow = append(c.out.Shadow, sh)
	}
	return nil
}

// DeadlineBlock is the §10.1 initial-assignment deadline:
// job_spec.submitted_at + job_spec.timeout_blocks (saturating). For M > 1
// it still counts from S, not from the assignment block H.
func DeadlineBlock(submittedAt, timeoutBlocks uint64) uint64 {
	if submittedAt > ^uint64(0)-timeoutBlocks {
		return ^uint64(0)
	}
	return submittedAt + timeoutBlocks
}

// RetryDeadlineBlock is the §10.1 timeout re-selection deadline: the current
// assignment block + job_spec.timeout_blocks (saturating).
func RetryDeadlineBlock(assignmentHeight, timeoutBlocks uint64) uint64 {
	return DeadlineBlock(assignmentHeight, timeoutBlocks)
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type emptyView struct{}

func (emptyView) Height() uint64                            { return 0 }
func (emptyView) ActiveRunners() []cip11.Address            { return nil }
func (emptyView) Runner(cip11.Address) (state.Runner, bool) { return state.Runner{}, false }
func (emptyView) ReputationConfig() state.ReputationConfig  { return state.DefaultReputationConfig() }
