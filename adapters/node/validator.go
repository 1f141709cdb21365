package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/adapters/pebble"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/adapters/store"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// ValidatorConfig configures a Validator.
type ValidatorConfig struct {
	Genesis *Genesis
	Keys    *ValidatorKeys
	// DataDir holds the Pebble state (state/), the block log (blocks.jsonl)
	// and the accepted job submissions (jobs.jsonl). Empty: a fresh
	// temporary directory, removed by Close.
	DataDir string
	// Listen is the QUIC UDP address (default: the genesis validator.quic).
	Listen string
	// BlockTime is the block interval of Run (1 s).
	BlockTime time.Duration
	// SkipPerMille nullifies that many views per thousand (§9.2 seed rules).
	SkipPerMille uint32
	// PushWindow paces each block's pushes at that many unanswered
	// assignments (quic.ServerConfig.PushWindow): 0 decides by the UDP
	// receive buffer the socket got, < 0 sends all at once.
	PushWindow int
	// NoSync turns fsync off for the block log, the job file and Pebble.
	NoSync bool
	// Seed seeds the skip draws.
	Seed   uint64
	Logger *slog.Logger
	// Metrics, if set, receives the node's Prometheus metrics.
	Metrics *httpapi.Metrics
	// Producer overrides block production (default: Solo from the keys).
	Producer Producer
	// Now is the wall clock for latencies and event times (time.Now).
	Now func() time.Time
}

// Validator is a single-validator CIP-11 chain node: it produces blocks
// (Producer), executes them with the engine over Pebble (replay.Executor,
// the same code `cip11 replay` runs), keeps them in a block log, serves
// runners over QUIC (adapters/quic) and pushes every assignment after its
// block is committed (§10.1). It is the one place, with Runner, that has
// goroutines and a clock; every rule is decided by the pure packages.
type Validator struct {
	cfg   ValidatorConfig
	g     *Genesis
	p     cip11.Params
	hdr   chainlog.Header
	log   *slog.Logger
	now   func() time.Time
	dir   string
	tmp   bool
	prod  Producer
	snap  *validators.Snapshot
	sets  *cquic.StaticValidatorSets
	srv   *cquic.Server
	jobsF *os.File

	mu      sync.Mutex // everything below, and every store access
	x       *replay.Executor
	blog    *blockLog
	last    *chainlog.Block
	mem     mempool
	jobs    map[cip11.Hash]*jobTrack
	live    []cip11.Hash // ids of jobs not yet terminal, in submission order (compacted every block)
	pubkeys map[cip11.Address]wire.PubKey
	// runnerIdx is each registered runner's ACTIVE_RUNNERS index (§7.2),
	// kept from the committed blocks' registrations.
	runnerIdx map[cip11.Address]int
	stats     Stats
	recent    []httpapi.BlockSummary
	lat       []float64 // recent push latencies (ms)
	closed    bool
	wg        sync.WaitGroup

	pingsOK, pingsBad int64 // server ping counts already in the metrics (ProduceBlock only)
}

// Stats are the validator's cumulative counts (the devnet report).
type Stats struct {
	Submitted, Assigned, Pushed, PushFailed, Acked, Completed, Expired int64
	Reselections                                                       int64
	FirstDraws, FirstDrawPresent                                       int64
	AckLatencies                                                       []time.Duration // block applied → JobAck received
	JobLatencyBlocks                                                   []uint64        // submit → included verified result
	Blocks                                                             uint64
}

type mempool struct {
	submits []cip11.Hash        // accepted jobs no block has included, in arrival order
	known   map[cip11.Hash]bool // tx hashes seen (dedupe), this generation
	old     map[cip11.Hash]bool // and the previous one (rotated every 1024 blocks)
	regs    []*Tx
	beats   map[cip11.Address]bool
}

// jobTrack is the node's non-consensus record of one job: its spec, the
// committee as of the last block, the verifier's commit/reveal state and
// its event history.
type jobTrack struct {
	spec      *JobSpec
	p         []byte
	state     httpapi.JobState
	submitted uint64 // block S (0 until included)
	deadline  uint64
	committee []cip11.Address
	delivered map[cip11.Address]bool
	included  map[cip11.Address]bool // ResultSubmit placed in a block
	commits   map[cip11.Address]cip11.Hash
	reveals   map[cip11.Address]cip11.Hash // verified reveals: runner → result
	verified  bool                         // Verified placed in a block
	appliedAt time.Time
	events    []httpapi.Event
}

// NewValidator opens (or creates) the data directory, recovers the block
// log against the store, and starts the QUIC server.
func NewValidator(cfg ValidatorConfig) (*Validator, error) {
	if cfg.Genesis == nil || cfg.Keys == nil || cfg.Keys.Peer == nil {
		return nil, fmt.Errorf("%w: genesis and validator keys are required", ErrNilConfig)
	}
	if err := cfg.Genesis.Validate(); err != nil {
		return nil, err
	}
	if cip11.Hash(cfg.Keys.Peer.PubKey().Raw()) != cfg.Genesis.Validator.PeerPubKey {
		return nil, fmt.Errorf("%w: the validator key is not the genesis validator's", ErrKeyFile)
	}
	if cfg.Keys.Threshold.PublicKey() != [96]byte(cfg.Genesis.Validator.ThresholdPubKey) {
		return nil, fmt.Errorf("%w: the BLS key is not the genesis threshold key", ErrKeyFile)
	}
	if cfg.BlockTime <= 0 {
		cfg.BlockTime = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Listen == "" {
		cfg.Listen = cfg.Genesis.Validator.QUIC
	}
	v := &Validator{
		cfg: cfg, g: cfg.Genesis, p: cfg.Genesis.P(), hdr: cfg.Genesis.Header(), log: cfg.Logger, now: cfg.Now,
		dir: cfg.DataDir, jobs: map[cip11.Hash]*jobTrack{}, pubkeys: map[cip11.Address]wire.PubKey{}, runnerIdx: map[cip11.Address]int{},
		mem: mempool{known: map[cip11.Hash]bool{}, beats: map[cip11.Address]bool{}},
	}
	v.prod = cfg.Producer
	if v.prod == nil {
		g := cfg.Genesis
		v.prod = &Solo{Key: cfg.Keys.Threshold, Namespace: g.Namespace, SkipPerMille: cfg.SkipPerMille,
			Rand:     rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
			Schedule: seed.FixedSchedule{ViewsPerEpoch: uint64(g.Schedule.ViewsPerEpoch), FirstView: uint64(g.Schedule.FirstView), LastKnownEpoch: uint64(g.Schedule.LastKnownEpoch)}}
	}
	if v.dir == "" {
		d, err := os.MkdirTemp("", "cip11-validator-")
		if err != nil {
			return nil, err
		}
		v.dir, v.tmp = d, true
	}
	if err := v.open(); err != nil {
		v.cleanup()
		return nil, err
	}
	return v, nil
}

func (v *Validator) cleanup() {
	if v.x != nil {
		v.x.Close()
	}
	if v.blog != nil {
		v.blog.close()
	}
	if v.jobsF != nil {
		v.jobsF.Close()
	}
	if v.tmp {
		os.RemoveAll(v.dir)
	}
}

func (v *Validator) open() error {
	if err := os.MkdirAll(v.dir, 0o755); err != nil {
		return err
	}
	sync := !v.cfg.NoSync
	mode := pebble.SyncAlways
	if !sync {
		mode = pebble.SyncNever
	}
	x, err := replay.NewExecutor(v.hdr, replay.Options{SnapshotCache: 8, OpenStore: func(h chainlog.Header) (store.Store, error) {
		return pebble.Open(filepath.Join(v.dir, "state"), pebble.Options{Sync: mode, ReputationConfig: &state.ReputationConfig{
			Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}})
	}})
	if err != nil {
		return err
	}
	v.x = x
	blog, blocks, err := openBlockLog(filepath.Join(v.dir, "blocks.jsonl"), v.hdr, sync)
	if err != nil {
		return err
	}
	v.blog = blog
	if err := v.loadJobs(); err != nil {
		return err
	}
	if err := v.recover(blocks); err != nil {
		return err
	}
	// accepted submissions no block included go back to the mempool
	v.mem.submits = slices.DeleteFunc(v.mem.submits, func(id cip11.Hash) bool { return v.jobs[id].state != httpapi.StateSubmitted })
	snap, err := v.g.Snapshot()
	if err != nil {
		return err
	}
	ep, err := validators.NewEpochs(nil, snap)
	if err != nil {
		return err
	}
	v.snap, v.sets = snap, cquic.NewStaticValidatorSets(ep)
	srv, err := cquic.NewServer(context.Background(), cquic.ServerConfig{
		Key: v.cfg.Keys.Peer, ChainID: uint64(v.g.ChainID), Params: v.p,
		Registry: v.x.Store().Registry(), Validators: v.sets,
		TxDecoder: TxCodec{}, TxValidator: TxCodec{}, Mempool: (*validatorMempool)(v),
		OnOutcome: v.onOutcome, OnAdmit: v.onAdmit, OnAck: v.onAck, OnRefuse: func(r wire.GoodbyeReason) { v.cfg.Metrics.RefusedWith(r) },
		OnPushError: v.onPushError, PushWindow: v.cfg.PushWindow,
		Listen: v.cfg.Listen,
	}, v.height())
	if err != nil {
		return err
	}
	v.srv = srv
	return nil
}

// recover brings the store level with the block log (§8.1 crash
// recovery): the log may be one block ahead (a crash between append and
// commit), never behind, and re-executing that block must reproduce it.
func (v *Validator) recover(blocks []chainlog.Block) error {
	sh, sok := v.x.LastCommitted()
	lh := uint64(len(blocks))
	if !sok {
		sh = 0
	}
	switch {
	case lh == sh:
	case lh == sh+1:
		b := blocks[lh-1]
		out, err := v.x.Execute(&b)
		if err != nil {
			return fmt.Errorf("%w: re-executing block %d: %v", ErrBlockLog, lh, err)
		}
		if d := replay.DiffOutput(lh, &b.Out, &out); d != nil {
			v.x.Discard()
			return fmt.Errorf("%w: block %d re-executes differently: %v", ErrBlockLog, lh, d)
		}
		if err := v.x.Commit(); err != nil {
			return err
		}
		v.log.Info("recovered the last block from the block log", "height", lh)
	default:
		return fmt.Errorf("%w: the store is at height %d, the block log at %d", ErrBlockLog, sh, lh)
	}
	for i := range blocks {
		v.observe(&blocks[i], time.Time{}, nil)
	}
	v.compact()
	if lh > 0 {
		v.last = &blocks[lh-1]
	}
	return nil
}

// jobLine is one accepted submission in jobs.jsonl.
type jobLine struct {
	Spec chainlog.Bytes `json:"spec"`
}

// loadJobs reads the accepted submissions; those no block has included
// go back to the mempool (nothing accepted is lost across a restart).
func (v *Validator) loadJobs() error {
	path := filepath.Join(v.dir, "jobs.jsonl")
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	good := 0
	for len(b[good:]) > 0 {
		i := slices.Index(b[good:], '\n')
		if i < 0 {
			break // torn last line
		}
		var jl jobLine
		if err := json.Unmarshal(b[good:good+i], &jl); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		spec, err := DecodeJobSpec(jl.Spec)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		good += i + 1
		if v.jobs[spec.ID()] != nil {
			continue
		}
		v.track(spec)
		v.mem.submits = append(v.mem.submits, spec.ID())
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(int64(good), 0); err != nil {
		f.Close()
		return err
	}
	v.jobsF = f
	return nil
}

func (v *Validator) track(spec *JobSpec) *jobTrack {
	id := spec.ID()
	t := &jobTrack{spec: spec, p: spec.Encode(), state: httpapi.StateSubmitted, delivered: map[cip11.Address]bool{},
		included: map[cip11.Address]bool{}, commits: map[cip11.Address]cip11.Hash{}, reveals: map[cip11.Address]cip11.Hash{}}
	v.jobs[id] = t
	v.live = append(v.live, id)
	return t
}

func (v *Validator) height() uint64 {
	if v.last == nil {
		return 0
	}
	return uint64(v.last.Height)
}

// Height is the last committed block height.
func (v *Validator) Height() uint64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.height()
}

// Addr is the QUIC UDP address runners dial.
func (v *Validator) Addr() net.Addr { return v.srv.Addr() }

// PeerKey is the validator's Ed25519 peer_pubkey (§5.4).
func (v *Validator) PeerKey() validators.PeerKey { return v.srv.PeerKey() }

// PushWindow is the push pacing in effect (quic.Server.PushWindow):
// unanswered assignments in flight per block push, or -1 for all at once.
func (v *Validator) PushWindow() int { return v.srv.PushWindow() }

// ValidatorSetHash is the active snapshot's validator_set_hash (§5.3).
func (v *Validator) ValidatorSetHash() cip11.Hash { return v.snap.Hash() }

// Dir is the data directory.
func (v *Validator) Dir() string { return v.dir }

// Server is the QUIC server (for tests and metrics).
func (v *Validator) Server() *cquic.Server { return v.srv }

// Run produces a block every BlockTime until ctx ends.
func (v *Validator) Run(ctx context.Context) error {
	t := time.NewTicker(v.cfg.BlockTime)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := v.ProduceBlock(); err != nil {
				if errors.Is(err, ErrClosed) {
					return nil
				}
				return err
			}
		}
	}
}

// Close stops the server and closes the store (removing a temporary data
// directory).
func (v *Validator) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	v.mu.Unlock()
	err := v.srv.Close()
	v.wg.Wait()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cleanup()
	return err
}

// ProduceBlock builds, executes, logs and commits the next block, then
// pushes its assignments (§10.1: only after the block is applied).
func (v *Validator) ProduceBlock() error {
	start := v.now()
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return ErrClosed
	}
	b, pushes, err := v.produce()
	if err != nil {
		v.mu.Unlock()
		return err
	}
	h := uint64(b.Height)
	applied := v.now()
	for _, a := range pushes {
		if t := v.jobs[a.JobID]; t != nil {
			t.appliedAt = applied
		}
	}
	v.mu.Unlock()
	exec := applied.Sub(start)
	errs := v.srv.Applied(h, pushes)
	v.mu.Lock()
	pushed := 0
	for i, a := range pushes {
		t := v.jobs[a.JobID]
		if t == nil {
			continue
		}
		r := a.Runner
		if i < len(errs) && errs[i] != nil {
			v.pushFailed(t, h, r, errs[i], v.now())
			continue
		}
		pushed++
		v.stats.Pushed++
		t.event(h, httpapi.EventPushed, &r, "", v.now())
	}
	v.recent = append(v.recent, httpapi.BlockSummary{Height: h, Time: applied, Txs: len(b.Txs), Assignments: len(b.Out.Assignments),
		Pushed: pushed, ExecMillis: float64(exec.Microseconds()) / 1000})
	if len(v.recent) > 60 {
		v.recent = v.recent[len(v.recent)-60:]
	}
	m := v.cfg.Metrics
	counts := v.jobCounts()
	mp := len(v.mem.submits) + len(v.mem.regs) + len(v.mem.beats)
	v.mu.Unlock()
	if m != nil {
		m.ObserveBlock(exec)
		m.SetJobs(counts)
		m.BlockProduced(h)
		m.SetMempool(mp)
		m.SetPresent(len(v.srv.Present()))
		m.SetConnected(len(v.srv.ConnectedRunners()))
		st := v.srv.Stats()
		for ; v.pingsOK < st.PingsOK; v.pingsOK++ {
			m.Ping(true)
		}
		for ; v.pingsBad < st.PingsRejected; v.pingsBad++ {
			m.Ping(false)
		}
	}
	return nil
}

// produce runs under v.mu.
func (v *Validator) produce() (*chainlog.Block, []cquic.Assignment, error) {
	h := v.height() + 1
	c, err := v.prod.Next(h, v.last)
	if err != nil {
		return nil, nil, err
	}
	b := &chainlog.Block{
		Height: chainlog.U64(h), Round: chainlog.Round{Epoch: chainlog.U64(c.Round.Epoch), View: chainlog.U64(c.Round.View)},
		ParentBeacon: c.ParentBeacon, Registry: []chainlog.RegistryOp{}, Heartbeats: []uint32{}, Txs: []chainlog.Tx{},
	}
	if c.Finalized != nil {
		f := chainlog.U64(*c.Finalized)
		b.Finalized = &f
	}
	var pres []byte
	if h == 1 { // registry(0) is empty
		empty, err := presence.NewSet(0, nil)
		if err != nil {
			return nil, nil, err
		}
		pres = presence.Encode(empty)
	} else if pres, err = v.srv.ProposerInput(h - 1); err != nil {
		return nil, nil, fmt.Errorf("presence input: %w", err)
	}
	pb := chainlog.Bytes(pres)
	b.Presence = &pb
	if b.ConsumedSeeds, err = engine.ProposeConsumedSeeds(v.x.Store().Pending(), c.Round, c.Finalized, c.Seed); err != nil {
		return nil, nil, fmt.Errorf("consumed seeds: %w", err)
	}
	if err := v.registryOps(h, b); err != nil {
		return nil, nil, err
	}
	full := v.txs(h, b)
	out, err := v.x.Execute(b)
	if err != nil && full {
		// A transaction the mempool's checks let through is invalid
		// here: the block goes out without transactions (they stay in
		// the mempool or are re-derived next block).
		v.log.Warn("block invalid with its transactions; retrying without them", "height", h, "err", err)
		b.Txs = []chainlog.Tx{}
		out, err = v.x.Execute(b)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("execute block %d: %w", h, err)
	}
	b.Out = out
	if err := v.blog.append(b); err != nil {
		v.x.Discard()
		return nil, nil, fmt.Errorf("block log: %w", err)
	}
	if err := v.x.Commit(); err != nil {
		return nil, nil, fmt.Errorf("commit block %d: %w", h, err)
	}
	v.last = b
	v.stats.Blocks++
	if h%1024 == 0 { // bounded dedupe memory: a re-admitted old duplicate changes nothing
		v.mem.old, v.mem.known = v.mem.known, map[cip11.Hash]bool{}
	}
	v.mem.regs, v.mem.beats = nil, map[cip11.Address]bool{}
	present := func(cip11.Address) bool { return false }
	if prev, err := v.x.Store().Registry().At(h - 1); err == nil && len(pres) > 0 {
		if bp, err := presence.ResolveBlockPresence(v.p, false, pres, len(prev.ActiveRunners())); err == nil {
			if pv, err := presence.NewView(bp.Present, prev); err == nil {
				present = pv.IsPresent
			}
		}
	}
	pushes := v.observe(b, v.now(), present)
	v.mem.submits = slices.DeleteFunc(v.mem.submits, func(id cip11.Hash) bool { return v.jobs[id].state != httpapi.StateSubmitted })
	v.compact()
	v.log.Debug("block", "height", h, "txs", len(b.Txs), "assignments", len(out.Assignments), "heartbeats", len(b.Heartbeats), "pushes", len(pushes))
	return b, pushes, nil
}

// registryOps adds genesis registrations (block 1), registrations and
// on-chain heartbeats from the mempool (§7.1). Heartbeats name registry
// indices in ACTIVE_RUNNERS order after this block's registrations.
func (v *Validator) registryOps(h uint64, b *chainlog.Block) error {
	if h > 1 && len(v.mem.regs) == 0 && len(v.mem.beats) == 0 {
		return nil
	}
	added := map[cip11.Address]int{} // this block's registrations
	register := func(a cip11.Address, stake cip11.U128, rep chainlog.U64) {
		if _, ok := v.runnerIdx[a]; ok {
			return
		}
		if _, ok := added[a]; ok {
			return
		}
		added[a] = len(v.runnerIdx) + len(added)
		b.Registry = append(b.Registry, chainlog.RegistryOp{Op: chainlog.OpRegister, Address: a, Stake: &stake, ReputationX1e9: &rep})
	}
	if h == 1 {
		for _, r := range v.g.Runners {
			register(r.Address, r.Stake, r.ReputationX1e9)
		}
	}
	for _, tx := range v.mem.regs {
		stake := cip11.U128{Hi: binary.BigEndian.Uint64(tx.Payload[:8]), Lo: binary.BigEndian.Uint64(tx.Payload[8:16])}
		register(tx.From, stake, 1_000_000_000)
	}
	reg := v.x.Store().Registrar()
	var beats []uint32
	for a := range v.mem.beats {
		i, ok := v.runnerIdx[a]
		if !ok {
			if i, ok = added[a]; !ok {
				continue
			}
		}
		if r, ok, err := reg.Latest(a); err == nil && ok && r.Health == state.Deregistered {
			continue
		}
		beats = append(beats, uint32(i))
	}
	slices.Sort(beats)
	b.Heartbeats = append(b.Heartbeats, beats...)
	return nil
}

// txs adds the block's transactions in order (D23): new submits, then the
// verifier's output: each revealed result of a current committee member
// (ResultSubmit), then Verified for jobs whose whole committee delivered,
// placed only while the job's deadline has not passed so that the timeout
// pass cannot have moved it (§11.2, D26). It reports whether any were
// added.
func (v *Validator) txs(h uint64, b *chainlog.Block) bool {
	for _, id := range v.mem.submits {
		s := v.jobs[id].spec
		b.Txs = append(b.Txs, chainlog.Tx{Submit: &chainlog.Submit{JobID: id, Submitter: s.Submitter, JobKind: s.Kind,
			CommitteeSize: s.Runners, TimeoutBlocks: chainlog.U64(s.TimeoutBlocks)}})
	}
	for _, id := range v.live {
		t := v.jobs[id]
		if t.state != httpapi.StateAssigned || t.verified || h > t.deadline {
			continue
		}
		all := true
		for _, r := range t.committee {
			if t.delivered[r] || t.included[r] {
				continue
			}
			if _, ok := t.reveals[r]; ok {
				b.Txs = append(b.Txs, chainlog.Tx{ResultSubmit: &chainlog.ResultSubmit{JobID: id, Runner: r}})
				t.included[r] = true
				continue
			}
			all = false
		}
		if !all || len(t.committee) == 0 {
			continue
		}
		vr := &chainlog.Verified{JobID: id, Matching: []cip11.Address{}, RunnersToSlash: []cip11.Address{}, RunnersUnrewarded: []cip11.Address{}}
		maj := majority(t.committee, t.reveals)
		for _, r := range t.committee {
			if t.reveals[r] == maj {
				vr.Matching = append(vr.Matching, r)
			}
		}
		b.Txs = append(b.Txs, chainlog.Tx{Verified: vr})
	}
	return len(b.Txs) > 0
}

// majority is the result most committee members revealed (ties: the one
// the earliest committee member revealed).
func majority(committee []cip11.Address, reveals map[cip11.Address]cip11.Hash) cip11.Hash {
	var best cip11.Hash
	n := 0
	for _, r := range committee {
		res, ok := reveals[r]
		if !ok {
			continue
		}
		c := 0
		for _, q := range committee {
			if x, ok := reveals[q]; ok && x == res {
				c++
			}
		}
		if c > n {
			best, n = res, c
		}
	}
	return best
}

// observe applies a committed block to the job tracker and returns the
// pushes it calls for: every new committee member of every assignment.
// present, if non-nil, is the block's present set (first-draw telemetry).
func (v *Validator) observe(b *chainlog.Block, at time.Time, present func(cip11.Address) bool) []cquic.Assignment {
	h := uint64(b.Height)
	for _, op := range b.Registry {
		if _, ok := v.runnerIdx[op.Address]; op.Op == chainlog.OpRegister && !ok {
			v.runnerIdx[op.Address] = len(v.runnerIdx)
		}
	}
	for _, tx := range b.Txs {
		switch {
		case tx.Submit != nil:
			t := v.jobs[tx.Submit.JobID]
			if t == nil { // every included job was accepted through jobs.jsonl first
				v.log.Warn("block log holds a job jobs.jsonl does not", "job", tx.Submit.JobID)
				continue
			}
			t.submitted, t.state = h, httpapi.StatePending
			v.stats.Submitted++
			t.event(h, httpapi.EventSubmitted, nil, "", at)
		case tx.ResultSubmit != nil:
			if t := v.jobs[tx.ResultSubmit.JobID]; t != nil && slices.Contains(t.committee, tx.ResultSubmit.Runner) {
				r := tx.ResultSubmit.Runner
				t.delivered[r], t.included[r] = true, true
				t.event(h, httpapi.EventResult, &r, "", at)
			}
		case tx.Verified != nil:
			if t := v.jobs[tx.Verified.JobID]; t != nil {
				t.state, t.verified = httpapi.StateCompleted, true
				v.stats.Completed++
				v.stats.JobLatencyBlocks = append(v.stats.JobLatencyBlocks, h-t.submitted)
				t.event(h, httpapi.EventCompleted, nil, fmt.Sprintf("%d matching", len(tx.Verified.Matching)), at)
			}
		}
	}
	var pushes []cquic.Assignment
	for _, a := range b.Out.Assignments {
		t := v.jobs[a.JobID]
		if t == nil {
			continue
		}
		prev := t.committee
		t.committee, t.deadline, t.state = slices.Clone(a.Committee), uint64(a.DeadlineBlock), httpapi.StateAssigned
		kind := httpapi.EventSelected
		if a.Reselection > 0 {
			kind = httpapi.EventReselected
			v.stats.Reselections++
		} else {
			v.stats.Assigned++
			if present != nil && len(a.Committee) > 0 {
				v.stats.FirstDraws++
				if present(a.Committee[0]) {
					v.stats.FirstDrawPresent++
				}
			}
		}
		t.event(h, kind, nil, fmt.Sprintf("committee %v, deadline %d", a.Committee, a.DeadlineBlock), at)
		for _, r := range a.Committee {
			if slices.Contains(prev, r) {
				continue
			}
			pushes = append(pushes, cquic.Assignment{JobID: a.JobID, JobSpec: t.p, AssignmentHeight: uint64(a.AssignmentHeight),
				DeadlineBlock: uint64(a.DeadlineBlock), Runner: r, MultiRunner: t.spec.Runners > 1})
		}
	}
	for _, id := range b.Out.Expired {
		if t := v.jobs[id]; t != nil {
			t.state = httpapi.StateExpired
			v.stats.Expired++
			t.event(h, httpapi.EventExpired, nil, "", at)
		}
	}
	return pushes
}

// compact drops terminal jobs from the open list.
func (v *Validator) compact() {
	v.live = slices.DeleteFunc(v.live, func(id cip11.Hash) bool {
		s := v.jobs[id].state
		return s == httpapi.StateCompleted || s == httpapi.StateExpired
	})
}

func (t *jobTrack) event(h uint64, kind httpapi.EventKind, r *cip11.Address, detail string, at time.Time) {
	if len(t.events) >= 64 {
		return
	}
	var rp *cip11.Address
	if r != nil {
		a := *r
		rp = &a
	}
	t.events = append(t.events, httpapi.Event{Height: h, Kind: kind, Runner: rp, Detail: detail, Time: at})
}

func (v *Validator) jobCounts() map[httpapi.JobState]int {
	c := map[httpapi.JobState]int{}
	for _, s := range httpapi.JobStates() {
		c[s] = 0
	}
	for _, t := range v.jobs {
		c[t.state]++
	}
	return c
}

// onOutcome is the server's §10.6 classification of a push.
func (v *Validator) onOutcome(o cquic.Outcome) {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.cfg.Metrics
	name := outcomeName(o.Outcome)
	if m != nil {
		m.Push(string(name))
	}
	t := v.jobs[o.JobID]
	if t == nil {
		return
	}
	r := o.Runner
	detail := ""
	if o.Err != nil {
		detail = o.Err.Error()
	}
	t.event(o.Height, name, &r, detail, now)
}

// onPushError records a paced push that failed after Applied returned
// (its seat was counted as pushed then); the job goes on by its deadline
// and D26 re-selection, like any unanswered seat.
func (v *Validator) onPushError(a cquic.Assignment, err error) {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pushFailed(v.jobs[a.JobID], v.height(), a.Runner, err, now)
}

// pushFailed counts a failed push of job t (nil: no longer tracked) to r
// and records it in t's history. v.mu is held.
func (v *Validator) pushFailed(t *jobTrack, h uint64, r cip11.Address, err error, at time.Time) {
	v.stats.PushFailed++
	if t != nil {
		t.event(h, httpapi.EventPushFailed, &r, err.Error(), at)
	}
}

// onAck is a verified JobAck (§10.2): push latency is measured from the
// block's application to here.
func (v *Validator) onAck(id cip11.Hash, r cip11.Address, st wire.AckStatus) {
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.jobs[id]
	if t == nil {
		return
	}
	t.event(v.height(), httpapi.EventAcked, &r, st.Kind.String(), now)
	if st.Kind != wire.AckAccepted {
		return
	}
	v.stats.Acked++
	if t.appliedAt.IsZero() {
		return
	}
	d := now.Sub(t.appliedAt)
	v.stats.AckLatencies = append(v.stats.AckLatencies, d)
	v.lat = append(v.lat, float64(d.Microseconds())/1000)
	if len(v.lat) > 2000 {
		v.lat = v.lat[len(v.lat)-2000:]
	}
	if m := v.cfg.Metrics; m != nil {
		m.ObserveAck(d)
	}
}

func outcomeName(o local.Outcome) httpapi.EventKind {
	switch o {
	case local.Success:
		return httpapi.EventSuccess
	case local.Duplicate:
		return httpapi.EventDuplicate
	case local.SoftFailure:
		return httpapi.EventSoftFailure
	}
	return httpapi.EventHardFailure
}

func (v *Validator) onAdmit(cip11.Address) {
	if m := v.cfg.Metrics; m != nil {
		m.Admitted()
	}
}

// validatorMempool is the server's Mempool: forwarded result transactions
// (§10.3) enter the same path as POST /submit.
type validatorMempool Validator

func (m *validatorMempool) Submit(raw []byte, _ wire.Transaction) error {
	_, err := (*Validator)(m).SubmitTx(raw)
	if errors.Is(err, ErrDuplicate) {
		return nil
	}
	return err
}

// ErrDuplicate: the transaction is already known (§10.3: not a failure).
var ErrDuplicate = errors.New("node: duplicate transaction")

// SubmitTx is transaction admission (POST /submit and the QUIC result
// path): decode and verify, then hand to the mempool or the verifier.
func (v *Validator) SubmitTx(raw []byte) (*Tx, error) {
	tx, err := DecodeTx(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil, ErrClosed
	}
	hash := tx.Hash()
	if v.mem.known[hash] || v.mem.old[hash] {
		return tx, ErrDuplicate
	}
	v.mem.known[hash] = true
	v.pubkeys[tx.From] = tx.PubKey
	switch tx.Kind {
	case TxHeartbeat:
		v.mem.beats[tx.From] = true
	case TxRegister:
		v.mem.regs = append(v.mem.regs, tx)
	case TxCommit, TxReveal:
		t := v.jobs[tx.JobID]
		if t == nil {
			return tx, fmt.Errorf("%w: unknown job %s", ErrBadRequest, tx.JobID)
		}
		if tx.Kind == TxCommit {
			if _, ok := t.commits[tx.From]; !ok {
				t.commits[tx.From] = cip11.Hash(tx.Payload)
				f := tx.From
				t.event(v.height(), httpapi.EventCommit, &f, "", v.now())
			}
			return tx, nil
		}
		res, salt, _ := SplitReveal(tx.Payload)
		if t.spec.Runners > 1 {
			c, ok := t.commits[tx.From]
			if !ok || Commitment(res, salt) != c {
				delete(v.mem.known, hash) // may become valid once the commit arrives
				return tx, fmt.Errorf("%w: reveal without a matching commitment (CIP-2 commit-reveal)", ErrBadRequest)
			}
		}
		if _, ok := t.reveals[tx.From]; !ok {
			t.reveals[tx.From] = res
			f := tx.From
			t.event(v.height(), httpapi.EventRevealed, &f, "", v.now())
		}
	}
	if m := v.cfg.Metrics; m != nil {
		m.ResultForwarded()
	}
	return tx, nil
}

// SubmitJob accepts a job: the spec is checked, written to jobs.jsonl
// (fsynced unless NoSync) and queued for the next block.
func (v *Validator) SubmitJob(spec *JobSpec) (cip11.Hash, error) {
	if err := spec.Check(); err != nil {
		return cip11.Hash{}, err
	}
	id := spec.ID()
	line, err := json.Marshal(jobLine{Spec: spec.Encode()})
	if err != nil {
		return id, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return id, ErrClosed
	}
	if v.jobs[id] != nil {
		return id, fmt.Errorf("%w: job %s", ErrDuplicate, id)
	}
	if _, err := v.jobsF.Write(append(line, '\n')); err != nil {
		return id, err
	}
	if !v.cfg.NoSync {
		if err := v.jobsF.Sync(); err != nil {
			return id, err
		}
	}
	v.track(spec)
	v.mem.submits = append(v.mem.submits, id)
	return id, nil
}

// Stats returns a copy of the cumulative counts.
func (v *Validator) Stats() Stats {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.stats
	s.AckLatencies = slices.Clone(s.AckLatencies)
	s.JobLatencyBlocks = slices.Clone(s.JobLatencyBlocks)
	return s
}

// JobStates counts jobs by state, and lists those not terminal.
func (v *Validator) JobStates() (counts map[httpapi.JobState]int, open []cip11.Hash) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, id := range v.live {
		if s := v.jobs[id].state; s != httpapi.StateCompleted && s != httpapi.StateExpired {
			open = append(open, id)
		}
	}
	return v.jobCounts(), open
}

// Job returns a job's view.
func (v *Validator) Job(id cip11.Hash) (httpapi.JobView, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.jobs[id]
	if t == nil {
		return httpapi.JobView{}, false
	}
	return t.view(id), true
}

func (t *jobTrack) view(id cip11.Hash) httpapi.JobView {
	return httpapi.JobView{ID: id, State: t.state, Submitter: t.spec.Submitter, JobKind: t.spec.Kind, Runners: t.spec.Runners, SubmittedAt: t.submitted, DeadlineBlock: t.deadline,
		Committee: slices.Clone(t.committee), Events: slices.Clone(t.events)}
}

// RunnerJobs is the poll fallback (§14): the signed assignments of every
// job whose current committee holds runner and whose result it has not
// delivered.
func (v *Validator) RunnerJobs(runner cip11.Address) ([]*wire.JobAssignment, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	pk, ok := v.pubkeys[runner]
	if !ok {
		return []*wire.JobAssignment{}, nil // the runner's key is learned from its first transaction
	}
	out := []*wire.JobAssignment{}
	for _, id := range v.live {
		t := v.jobs[id]
		if t.state != httpapi.StateAssigned || t.delivered[runner] || !slices.Contains(t.committee, runner) {
			continue
		}
		a := &wire.JobAssignment{JobID: id, JobSpec: t.p, JobSpecHash: wire.JobSpecHash(t.p),
			AssignmentHeight: t.assignedAt(), DeadlineBlock: t.deadline, RunnerPubKey: pk}
		if err := a.Sign(uint64(v.g.ChainID), v.cfg.Keys.Peer); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (t *jobTrack) assignedAt() uint64 {
	for i := len(t.events) - 1; i >= 0; i-- {
		if k := t.events[i].Kind; k == httpapi.EventSelected || k == httpapi.EventReselected {
			return t.events[i].Height
		}
	}
	return t.submitted
}

// Status is the node's identity and counts (GET /status).
func (v *Validator) Status() httpapi.Status {
	v.mu.Lock()
	h := v.height()
	mp := len(v.mem.submits) + len(v.mem.regs) + len(v.mem.beats)
	v.mu.Unlock()
	n := 0
	if view, err := v.viewAt(h); err == nil {
		n = len(view.ActiveRunners())
	}
	return httpapi.Status{
		ChainID: uint64(v.g.ChainID), Height: h, BlockTimeMillis: v.cfg.BlockTime.Milliseconds(),
		QUICAddr: v.srv.Addr().String(), PeerKey: fmt.Sprintf("%x", v.srv.PeerKey()), ValidatorSetHash: v.snap.Hash(),
		SubsetEpoch: v.snap.Epoch(), Runners: n, Connected: len(v.srv.ConnectedRunners()), Present: len(v.srv.Present()),
		Mempool: mp, PollDisabled: v.p.PollDisabled, Version: "cip11 r1.3.1",
	}
}

func (v *Validator) viewAt(h uint64) (state.RegistryView, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.x.Store().Registry().At(h)
}
