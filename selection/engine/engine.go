package engine

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/merkle"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection"
	"github.com/cip11/cip11/state"
)

// Validators is the consensus validator-set view the engine reads (§5.4,
// DECISIONS D25): the number of participants of the snapshot active at
// height h. presence/validators.History implements it; [FixedValidators]
// is the constant in-memory one.
type Validators interface {
	ParticipantsAt(h uint64) (int, error)
}

// FixedValidators is a [Validators] whose set never changes size.
type FixedValidators int

// ParticipantsAt implements [Validators].
func (n FixedValidators) ParticipantsAt(uint64) (int, error) { return int(n), nil }

// PresenceSource resolves PresenceInput(H) (§7.2) into membership tests.
// live is the set selection uses; shadow is non-nil only for
// CIP11_PRESENCE_SHADOW_ENABLED telemetry while present-first is off. An
// error makes the block invalid (§7.2 rule 2). presence.BlockPresenceSource
// implements it.
type PresenceSource interface {
	Resolve(h uint64, field []byte, parent state.RegistryView, modeAEffective bool) (live, shadow func(cip11.Address) bool, err error)
}

// Config is everything an [Engine] needs. Every field is required unless
// marked optional; [New] validates it.
type Config struct {
	// Params are the §13 constants and flags.
	Params cip11.Params
	// GenesisBeacon is the configured consensus genesis beacon (§9.2),
	// used by M == 1 selection when a block has no parent beacon. Required
	// when present-first selection is enabled.
	GenesisBeacon *seed.Beacon

	Registry   state.Registry     // historical Runner Registry views (end of block h)
	Validators Validators         // validator-set size at a height (D25)
	Jobs       JobStore           // job records
	Pending    PendingStore       // PendingSelectionV1 under the §9.2 keys
	Keys       seed.ThresholdKeys // epoch → threshold public key (§9.2)
	Advance    seed.AdvanceRound  // consensus-owned advance_round (D13)
	MRU        mru.Store          // mru_key state (§9.3, §9.4)
	Presence   PresenceSource     // PresenceInput(H) resolution (§7.2)

	// Filters returns the non-floor §9.1 filters bound to a job; nil means
	// the floor alone. Optional.
	Filters func(j Job) []selection.Filter
	// Timeout decides timeout re-selection (§11.2); nil means
	// [DefaultTimeout] (D26). Optional.
	Timeout TimeoutPolicy
	// Root computes candidates_snapshot_root; nil means merkle.Root. A
	// replacement must return exactly merkle.Root's value (it exists so an
	// adapter can hash on several cores). Optional.
	Root func([]merkle.Leaf) cip11.Hash
	// SnapshotCache keeps the candidate snapshots of up to this many
	// heights between blocks, so the pending pass and re-selections need
	// not re-derive them (§9.2 allows a non-consensus cache; results are
	// identical without it). About 72 bytes per eligible runner per
	// height. 0 disables it. Optional.
	SnapshotCache int
}

// Engine executes the CIP-11 part of blocks (§9.2, §9.4, §11.2), the
// analogue of raft's RawNode: synchronous, single-threaded, all state in its
// injected stores. An Engine is not safe for concurrent use.
type Engine struct {
	cfg     Config
	timeout TimeoutPolicy
	cache   *snapshotCache
	// prev is the last filter-free snapshot built, whose base weights the
	// next one reuses where the weight inputs are unchanged (a weight is a
	// pure function of them, so this is safe across any reorganisation).
	prev *selection.Snapshot
}

// New validates cfg and returns an engine. A nil required dependency wraps
// [ErrNilDependency]; invalid parameters or a missing genesis beacon wrap
// [ErrInvalidConfig].
func New(cfg Config) (*Engine, error) {
	deps := []struct {
		name string
		nil  bool
	}{
		{"Registry", cfg.Registry == nil}, {"Validators", cfg.Validators == nil}, {"Jobs", cfg.Jobs == nil},
		{"Pending", cfg.Pending == nil}, {"Keys", cfg.Keys == nil}, {"Advance", cfg.Advance == nil},
		{"MRU", cfg.MRU == nil}, {"Presence", cfg.Presence == nil},
	}
	for _, d := range deps {
		if d.nil {
			return nil, fmt.Errorf("%w: Config.%s", ErrNilDependency, d.name)
		}
	}
	if err := cfg.Params.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := seed.CheckGenesisBeacon(cfg.Params.PresentFirstEnabled, cfg.GenesisBeacon); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.SnapshotCache < 0 {
		return nil, fmt.Errorf("%w: SnapshotCache %d < 0", ErrInvalidConfig, cfg.SnapshotCache)
	}
	e := &Engine{cfg: cfg, timeout: cfg.Timeout}
	if e.cfg.Root == nil {
		e.cfg.Root = merkle.Root
	}
	if e.timeout == nil {
		e.timeout = DefaultTimeout{}
	}
	if cfg.SnapshotCache > 0 {
		e.cache = newSnapshotCache(cfg.SnapshotCache)
	}
	return e, nil
}

// Block is the execution context and the CIP-11-relevant content of one
// block. Everything the engine decides on comes from here or from the
// stores, never from node-local views (D22, §17: identical on propose,
// verify and replay).
type Block struct {
	Height        uint64
	ProposalRound seed.Round   // r_submit for jobs submitted in this block
	ParentBeacon  *seed.Beacon // R_{H−1}; nil only when the parent predates the first certified round
	// Finalized is the greatest height finalized and applied in this
	// block's execution context (§9.2 condition 1, D22); nil means none.
	Finalized     *uint64
	PresenceInput []byte // committed PresenceInputV1 bytes; nil when absent
	ConsumedSeeds []byte // committed ConsumedSeedsV1 bytes
	Txs           []Tx   // the block's CIP-11-relevant transactions, in block order (D23)
}

// Tx is one CIP-11-relevant transaction of a block: [Submit],
// [ResultSubmit] or [Verified].
type Tx interface{ isTx() }

// Submit is a JobSubmit (§9.2).
type Submit struct{ Job Job }

// ResultSubmit is an included SystemInstruction::JobResultSubmit of one
// committee runner (§11.2: the runner delivered).
type ResultSubmit struct {
	JobID  [32]byte
	Runner cip11.Address
}

// Verified is the Result Verifier's verified result of a job (§9.4). The
// committee order comes from the job record; the sets are the verifier's.
type Verified struct {
	JobID             [32]byte
	Matching          []cip11.Address
	RunnersToSlash    []cip11.Address
	RunnersUnrewarded []cip11.Address
}

func (Submit) isTx()       {}
func (ResultSubmit) isTx() {}
func (Verified) isTx()     {}

// Assignment is one committee written by a block.
type Assignment struct {
	JobID            [32]byte
	SubmittedAt      uint64
	AssignmentHeight uint64
	DeadlineBlock    uint64
	Mode             seed.Mode
	Branch           selection.Branch
	Seed             cip11.Hash
	Committee        []cip11.Address // draw order; for a re-selection, kept runners then new draws
	Reselection      uint32          // 0 for the first selection
}

// MRUWrite is one §9.4 mru_key write.
type MRUWrite struct {
	Submitter cip11.Address
	Kind      mru.JobKind
	Record    mru.Record
}

// BlockResult is what a block produced, in execution order.
type BlockResult struct {
	Assignments     []Assignment         // pending pass, then timeout re-selections, then M == 1 submits in block order
	PendingWritten  []PendingSelectionV1 // M > 1 records written by this block's submits
	PendingConsumed [][32]byte           // job_ids whose records this block consumed
	Expired         [][32]byte           // jobs the timeout policy expired
	MRUWrites       []MRUWrite           // in block order
	Shadow          []Assignment         // shadow present-first draws (telemetry only)
}

// ExecuteBlock runs block b: it verifies the block's consensus inputs
// (parent beacon, ConsumedSeedsV1, PresenceInputV1), then runs the
// start-of-block pending pass (§9.2) and timeout pass (§11.2, D26), then
// the block's transactions in order (D23). Any error means the block is
// invalid or a store failed: the caller must discard the block's writes
// (give the engine stores that commit only on success).
func (e *Engine) ExecuteBlock(b Block) (BlockResult, error) {
	c, err := e.begin(b)
	if err != nil {
		return BlockResult{}, err
	}
	if err := c.pendingPass(); err != nil {
		return BlockResult{}, fmt.Errorf("pending pass: %w", err)
	}
	if err := c.timeoutPass(); err != nil {
		return BlockResult{}, fmt.Errorf("timeout pass: %w", err)
	}
	for i, tx := range b.Txs {
		if err := c.apply(tx); err != nil {
			return BlockResult{}, fmt.Errorf("tx %d: %w", i, err)
		}
	}
	return c.out, nil
}

// blockCtx is one block's execution: its inputs, what is computed once
// per block, and its output.
type blockCtx struct {
	e              *Engine
	p              *cip11.Params
	b              Block
	multiValidator bool
	modeAEffective bool
	live, shadow   func(cip11.Address) bool
	consumed       seed.ConsumedSeedsV1
	beaconSeed     cip11.Hash // canonical_seed_bytes(R_{H−1}) or of the genesis beacon
	snapshots      map[uint64]*selection.Snapshot
	pools          map[poolKey]*selection.Pools
	hasher         seed.Hasher // reused Keccak state: seeds cost no allocation
	out            BlockResult
}

// poolKey identifies pools shared by every job of a block without
// job-specific filters: same snapshot height, branch and presence.
type poolKey struct {
	t      uint64
	branch selection.Branch
	shadow bool
}

// begin verifies the block's consensus inputs, every one of them on every
// block whether or not a job uses it (SPEC-NOTES SEL5), and fixes the
// per-block topology (D25) and presence (§7.2).
func (e *Engine) begin(b Block) (*blockCtx, error) {
	e.cache.begin(b.Height)
	c := &blockCtx{e: e, p: &e.cfg.Params, b: b,
		snapshots: make(map[uint64]*selection.Snapshot), pools: make(map[poolKey]*selection.Pools)}
	n, err := e.cfg.Validators.ParticipantsAt(b.Height)
	if err != nil {
		return nil, fmt.Errorf("validator set: %w", err)
	}
	c.multiValidator = n > 1
	c.modeAEffective = c.p.ModeAEffective(uint32(c.p.SubsetSize(n)))
	if c.beaconSeed, err = c.verifyParentBeacon(); err != nil {
		return nil, err
	}
	if c.consumed, err = seed.DecodeConsumedSeedsV1(b.ConsumedSeeds); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConsumedSeeds, err)
	}
	parent, err := e.view(b.Height)
	if err != nil {
		return nil, err
	}
	if c.live, c.shadow, err = e.cfg.Presence.Resolve(b.Height, b.PresenceInput, parent, c.modeAEffective); err != nil {
		return nil, err
	}
	if !c.p.PresentFirstEnabled {
		c.live = nil // D24: no present set while present-first is off
	}
	return c, nil
}

// verifyParentBeacon verifies R_{H−1} under its epoch's threshold key
// (§9.2) and returns canonical_seed_bytes of the beacon M == 1 selection
// uses. The configured genesis beacon is chain configuration, trusted as
// such.
func (c *blockCtx) verifyParentBeacon() (cip11.Hash, error) {
	beacon, err := seed.ParentBeacon(c.b.ParentBeacon, c.e.cfg.GenesisBeacon)
	if err != nil {
		if c.b.ParentBeacon == nil && c.e.cfg.GenesisBeacon == nil {
			return cip11.Hash{}, nil // no beacon at all: only an M == 1 submit can fail on it
		}
		return cip11.Hash{}, fmt.Errorf("%w: %w", ErrParentBeacon, err)
	}
	if c.b.ParentBeacon != nil {
		v, err := c.e.cfg.Keys.KeyForEpoch(beacon.Round.Epoch)
		if err != nil {
			return cip11.Hash{}, fmt.Errorf("%w: %w", ErrParentBeacon, err)
		}
		if err := v.Verify(beacon.Round, beacon.Signature[:]); err != nil {
			return cip11.Hash{}, fmt.Errorf("%w: %w", ErrParentBeacon, err)
		}
	}
	return c.hasher.BeaconHash(beacon.Round, &beacon.Signature), nil
}

// view returns the registry that block t selects from: the state at the
// start of block t, i.e. as stored at the end of t−1 (SPEC-NOTES §9.2
// "block-T state"). Block 0 selects from the empty registry.
func (e *Engine) view(t uint64) (state.RegistryView, error) {
	if t == 0 {
		return emptyView{}, nil
	}
	return e.cfg.Registry.At(t - 1)
}

func (c *blockCtx) filters(j Job) []selection.Filter {
	if c.e.cfg.Filters == nil {
		return nil
	}
	return c.e.cfg.Filters(j)
}

// snapshot returns the block-t candidate snapshot of job j, built once per
// block for jobs without job-specific filters.
func (c *blockCtx) snapshot(t uint64, j Job) (*selection.Snapshot, error) {
	filters := c.filters(j)
	if len(filters) == 0 {
		if s, ok := c.snapshots[t]; ok {
			return s, nil
		}
		if s := c.e.cache.get(t); s != nil {
			c.snapshots[t] = s
			return s, nil
		}
	}
	v, err := c.e.view(t)
	if err != nil {
		return nil, err
	}
	s, err := selection.BuildSnapshotFrom(v, t, c.e.cfg.Params, c.e.prev, filters...)
	if err != nil {
		return nil, err
	}
	if len(filters) == 0 {
		c.snapshots[t] = s
		c.e.cache.put(s)
		c.e.prev = s
	}
	return s, nil
}

// apply executes one transaction (D23).
func (c *blockCtx) apply(tx Tx) error {
	switch tx := tx.(type) {
	case Submit:
		return c.submit(tx.Job)
	case ResultSubmit:
		return c.resultSubmit(tx)
	case Verified:
		return c.verified(tx)
	}
	return fmt.Errorf("%w: %T", ErrUnknownTx, tx)
}

func (c *blockCtx) submit(j Job) error {
	if j.CommitteeSize == 0 {
		return fmt.Errorf("%w: job %x: M = 0", ErrCommitteeSize, j.JobID)
	}
	if !j.Kind.Valid() { // §9.4: job_kind is the consensus byte table
		return fmt.Errorf("%w: job %x: job_kind %d", mru.ErrUnknownJobKind, j.JobID, j.Kind)
	}
	rec := JobRecord{Job: j, SubmittedAt: c.b.Height, Status: StatusPending, Mode: seed.ModeDelayed}
	if j.CommitteeSize == 1 {
		a, err := c.selectImmediate(j)
		if err != nil {
			return fmt.Errorf("job %x: %w", j.JobID, err)
		}
		rec.assign(a, len(a.Committee))
		return c.e.cfg.Jobs.Insert(rec)
	}
	if err := c.e.cfg.Jobs.Insert(rec); err != nil {
		return err
	}
	return c.writePending(j)
}

// assign records assignment a, with drawn new draws, as the job's
// current one. Delivered runners stay delivered across a re-selection.
func (r *JobRecord) assign(a Assignment, drawn int) {
	r.Status = StatusAssigned
	r.Mode, r.Branch, r.Seed = a.Mode, a.Branch, a.Seed
	r.AssignmentHeight, r.DeadlineBlock = a.AssignmentHeight, a.DeadlineBlock
	r.Committee = slices.Clone(a.Committee)
	r.Reselections = a.Reselection
	r.NextDraw += uint64(drawn)
}

// selectImmediate is M == 1: selection in block S from R_{S−1} (or the
// configured genesis beacon), mode 0x00, T = H = S.
func (c *blockCtx) selectImmediate(j Job) (Assignment, error) {
	if c.b.ParentBeacon == nil && c.e.cfg.GenesisBeacon == nil {
		return Assignment{}, fmt.Errorf("%w: %w", ErrParentBeacon, seed.ErrNoGenesisBeacon)
	}
	id := cip11.Hash(j.JobID)
	s, err := c.hasher.SelectionSeed(seed.ModeImmediate, &c.beaconSeed, &id, c.b.Height)
	if err != nil {
		return Assignment{}, err
	}
	snap, err := c.snapshot(c.b.Height, j)
	if err != nil {
		return Assignment{}, err
	}
	return c.assign(j, snap, s, seed.ModeImmediate, c.b.Height)
}

// writePending is M > 1 in block S: fix r_submit, r_seed and the block-S
// root, write both storage keys, assign nothing (§9.2).
func (c *blockCtx) writePending(j Job) error {
	rSeed, ok, err := seed.SeedRound(c.e.cfg.Advance, c.b.ProposalRound, c.p.SelectionSeedDelayViews)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: advance_round(%v, %d)", ErrSeedRoundUnmappable, c.b.ProposalRound, c.p.SelectionSeedDelayViews)
	}
	snap, err := c.snapshot(c.b.Height, j)
	if err != nil {
		return err
	}
	r := PendingSelectionV1{
		Version: PendingVersion, JobID: j.JobID,
		SubmittedAt: c.b.Height, SelectionStateHeight: c.b.Height, CommitteeSize: j.CommitteeSize,
		SubmissionEpoch: c.b.ProposalRound.Epoch, SubmissionView: c.b.ProposalRound.View,
		SeedEpoch: rSeed.Epoch, SeedView: rSeed.View, SeedDelayViews: c.p.SelectionSeedDelayViews,
		CandidatesSnapshotRoot: snap.RootBy(c.e.cfg.Root),
	}
	if err := c.e.cfg.Pending.Put(r); err != nil {
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
// whose block S is finalized in this block's context (D22) and must verify
// under its epoch's key; the collected records are processed in ascending
// (submitted_at, job_id).
func (c *blockCtx) pendingPass() error {
	var due []dueRecord
	var processed []seed.Round
	for _, en := range c.consumed {
		recs, err := c.e.cfg.Pending.DueAt(en.Round.Epoch, en.Round.View)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if c.finalized(r.SubmittedAt) {
				due = append(due, dueRecord{r, seed.Beacon(en)})
				processed = append(processed, en.Round)
			}
		}
	}
	if err := seed.ValidateConsumedSeeds(c.consumed, processed, c.e.cfg.Keys); err != nil {
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
			return fmt.Errorf("job %x: %w", d.rec.JobID, err)
		}
	}
	return nil
}

// finalized is §9.2 condition 1 read from the block's execution context.
func (c *blockCtx) finalized(h uint64) bool { return c.b.Finalized != nil && h <= *c.b.Finalized }

// assignPending is the §9.2 successful-assignment transition: (1) a live
// record exists, the seed is exactly the record's round; (2) the block-S
// root re-derives; (3) the committee is drawn and written with assignment
// height H; (4) both keys are deleted.
func (c *blockCtx) assignPending(r PendingSelectionV1, beacon seed.Beacon) error {
	live, ok, err := c.e.cfg.Pending.Get(r.JobID)
	if err != nil {
		return err
	}
	if !ok || live != r {
		return ErrNoLivePending
	}
	if beacon.Round != (seed.Round{Epoch: r.SeedEpoch, View: r.SeedView}) {
		return ErrSeedRoundMismatch
	}
	rec, ok, err := c.e.cfg.Jobs.Job(r.JobID)
	if err != nil {
		return err
	}
	if !ok || rec.Status != StatusPending {
		return fmt.Errorf("%w: job record", ErrNoLivePending)
	}
	snap, err := c.pendingSnapshot(r, rec.Job)
	if err != nil {
		return err
	}
	csb, id := c.hasher.BeaconHash(beacon.Round, &beacon.Signature), cip11.Hash(r.JobID)
	s, err := c.hasher.SelectionSeed(seed.ModeDelayed, &csb, &id, r.SubmittedAt)
	if err != nil {
		return err
	}
	a, err := c.assign(rec.Job, snap, s, seed.ModeDelayed, r.SubmittedAt)
	if err != nil {
		return err
	}
	rec.assign(a, len(a.Committee))
	if err := c.e.cfg.Jobs.Update(rec); err != nil {
		return err
	}
	if err := c.e.cfg.Pending.Delete(r); err != nil {
		return err
	}
	c.out.PendingConsumed = append(c.out.PendingConsumed, r.JobID)
	return nil
}

// pendingSnapshot re-derives the block-S snapshot of r and checks it
// against the committed root (§9.2 condition 3; a mismatch makes the block
// invalid, SPEC-NOTES). The snapshot may come from the non-consensus
// cache; its root is compared all the same.
func (c *blockCtx) pendingSnapshot(r PendingSelectionV1, j Job) (*selection.Snapshot, error) {
	snap, err := c.snapshot(r.SelectionStateHeight, j)
	if err != nil {
		return nil, err
	}
	if snap.RootBy(c.e.cfg.Root) != r.CandidatesSnapshotRoot {
		return nil, ErrSnapshotRootMismatch
	}
	return snap, nil
}

// mruFor is lookup_mru at the assignment read point H (§9.3), or nil when
// present-first selection is off (D24) or no fresh record applies.
func (c *blockCtx) mruFor(j Job) (*selection.MRU, error) {
	if !c.p.PresentFirstEnabled {
		return nil, nil
	}
	rec, ok, err := mru.Lookup(c.e.cfg.MRU, *c.p, j.Submitter, j.Kind, c.b.Height)
	if err != nil || !ok {
		return nil, err
	}
	return &selection.MRU{Address: rec.Runner, Multiplier: c.p.MRUWeightMultiplier}, nil
}

// branch is the §9.2 branch of job j in this block; Mode A only with
// present-first on (D24).
func (c *blockCtx) branch(j Job) selection.Branch {
	return selection.ChooseBranch(c.modeAEffective, c.multiValidator, j.CommitteeSize)
}

// assign draws the first committee of j at assignment height H = this
// block and records it, plus a shadow draw when shadow presence is on.
func (c *blockCtx) assign(j Job, snap *selection.Snapshot, s cip11.Hash, mode seed.Mode, submittedAt uint64) (Assignment, error) {
	m, err := c.mruFor(j)
	if err != nil {
		return Assignment{}, err
	}
	a := Assignment{
		JobID: j.JobID, SubmittedAt: submittedAt, AssignmentHeight: c.b.Height,
		DeadlineBlock: DeadlineBlock(c.b.Height, j.TimeoutBlocks), // D21: from H (= S for M == 1)
		Mode:          mode, Branch: c.branch(j), Seed: s,
	}
	a.Committee = c.poolsFor(j, snap, a.Branch, false).Draw(s, j.CommitteeSize, m)
	c.out.Assignments = append(c.out.Assignments, a)
	if c.shadow != nil {
		sh := a
		sh.Branch = selection.ChooseBranch(false, c.multiValidator, j.CommitteeSize)
		sh.Committee = c.poolsFor(j, snap, sh.Branch, true).Draw(s, j.CommitteeSize, nil)
		c.out.Shadow = append(c.out.Shadow, sh)
	}
	return a, nil
}

// poolsFor returns the draw pools of job j over snap for branch, shared by
// every job of the block that has no job-specific filters.
func (c *blockCtx) poolsFor(j Job, snap *selection.Snapshot, branch selection.Branch, shadow bool) *selection.Pools {
	isPresent := c.live
	if shadow {
		isPresent = c.shadow
	}
	if len(c.filters(j)) != 0 {
		return snap.Pools(branch, isPresent)
	}
	k := poolKey{snap.T, branch, shadow}
	p, ok := c.pools[k]
	if !ok {
		p = snap.Pools(branch, isPresent)
		c.pools[k] = p
	}
	return p
}

// resultSubmit records that a committee runner delivered (§11.2). A
// result from a runner outside the current committee, or for a job that is
// not assigned, changes nothing: CIP-2 owns result validity (SPEC-NOTES).
func (c *blockCtx) resultSubmit(tx ResultSubmit) error {
	rec, ok, err := c.e.cfg.Jobs.Job(tx.JobID)
	if err != nil || !ok || rec.Status != StatusAssigned {
		return err
	}
	if !slices.Contains(rec.Committee, tx.Runner) || rec.delivered(tx.Runner) {
		return nil
	}
	rec.Delivered = append(rec.Delivered, tx.Runner)
	return c.e.cfg.Jobs.Update(rec)
}

// verified applies a verified result: the job completes and the §9.4
// write path records the MRU winner from the stored committee order.
func (c *blockCtx) verified(tx Verified) error {
	rec, ok, err := c.e.cfg.Jobs.Job(tx.JobID)
	if err != nil {
		return err
	}
	if !ok || rec.Status != StatusAssigned {
		return fmt.Errorf("%w: job %x", ErrJobNotAssigned, tx.JobID)
	}
	rec.Status = StatusCompleted
	if err := c.e.cfg.Jobs.Update(rec); err != nil {
		return err
	}
	o := mru.Outcome{Committee: rec.Committee, Matching: tx.Matching, RunnersToSlash: tx.RunnersToSlash, RunnersUnrewarded: tx.RunnersUnrewarded}
	w, ok, err := mru.RecordResult(c.e.cfg.MRU, *c.p, rec.Submitter, rec.Kind, o, c.b.Height)
	if err != nil || !ok {
		return err
	}
	c.out.MRUWrites = append(c.out.MRUWrites, MRUWrite{Submitter: rec.Submitter, Kind: rec.Kind, Record: w})
	return nil
}

// DeadlineBlock is the §10.1 deadline of an assignment written at block
// h: h + job_spec.timeout_blocks, saturating. For M == 1, h = S
// (submitted_at + timeout_blocks); for M > 1 it is the pending-pass block H
// (D21); for a re-selection the re-selection block (§10.1 retry rule).
func DeadlineBlock(h, timeoutBlocks uint64) uint64 {
	if h > ^uint64(0)-timeoutBlocks {
		return ^uint64(0)
	}
	return h + timeoutBlocks
}

type emptyView struct{}

func (emptyView) Height() uint64                            { return 0 }
func (emptyView) ActiveRunners() []cip11.Address            { return nil }
func (emptyView) Runner(cip11.Address) (state.Runner, bool) { return state.Runner{}, false }
func (emptyView) ReputationConfig() state.ReputationConfig  { return state.DefaultReputationConfig() }
