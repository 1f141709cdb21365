package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/adapters/pebble"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// ValidatorConfig configures a Validator.
type ValidatorConfig struct {
	Genesis *Genesis
	Keys    *ValidatorKeys
	// DataDir holds the Pebble state (state/), the block log (blocks.jsonl)
	// and its block times (blocks.times), the accepted job submissions (jobs.jsonl) and the archive of ended
	// jobs (jobs/). Empty: a fresh temporary directory, removed by Close.
	DataDir string
	// KeyFile, if set, is where Keys came from: a member of an in-band
	// epoch whose share Keys lacks reads it there when the epoch enters
	// the schedule (a process network's devnet dealer writes it into the
	// file, SPEC-NOTES C11; ScheduleConfig.KeyFile).
	KeyFile string
	// Listen is the QUIC UDP address (default: the genesis validator.quic).
	Listen string
	// BlockTime is the block interval of Run (1 s).
	BlockTime time.Duration
	// SkipPerMille nullifies that many views per thousand (§9.2 seed rules),
	// 0 … 1000.
	SkipPerMille uint32
	// PushWindow paces each block's pushes at that many unanswered
	// assignments (quic.ServerConfig.PushWindow): 0 decides by the UDP
	// receive buffer the socket got, < 0 sends all at once.
	PushWindow int
	// NoSync turns fsync off for the block log, the job file and Pebble.
	NoSync bool
	// RetainBlocks keeps ended jobs in memory that many blocks before they
	// move to the on-disk archive (chain.DefaultRetainBlocks).
	RetainBlocks uint64
	// Seed seeds the skip draws.
	Seed   uint64
	Logger *slog.Logger
	// Metrics, if set, receives the validator's own Prometheus series
	// (PrometheusMetrics). One Metrics may serve successive validators.
	Metrics *Metrics
	// Registerer, if set, receives the validator's collector, read at
	// scrape time: the transport's series (quic.NewCollector), the queue
	// drops and the state store's (metrics.go); Close unregisters it.
	Registerer prometheus.Registerer
	// Producer overrides block production (default: Solo from the keys).
	Producer Producer
	// Broadcaster, if set, is an external consensus engine (adapters/cometbft,
	// D29) that drives the core through the step API (ProposeBlock,
	// CheckBlock, FinalizeBlock, CommitBlock); Run then produces no block
	// itself and Producer is unused. The engine's mempool is the only
	// mempool: submissions (SubmitTx, SubmitJob) go to it, its admission
	// check is AdmitTx and AdmitJob on every validator (journaled and
	// tracked, pooled nowhere else), and proposals are built from the
	// transactions it hands ProposeBlock (D33).
	Broadcaster Broadcaster
	// RetainHeight, if set, is the block retention policy CommitBlock
	// reports (an engine's RetainHeight): given the committed height, the
	// lowest height whose block must be kept. Nil or 0: keep everything.
	RetainHeight func(committed uint64) uint64
	// Now is the wall clock for latencies and event times (time.Now).
	Now func() time.Time
	// OnPushes, if set, is told each committed block's pushes as they are
	// handed to the transport, after the catch-up gate (SetCatchUp), on
	// the loop: it must not call the validator.
	OnPushes func(h uint64, pushes []chain.Assignment)
	// StallBlocks is the health rule's threshold (health.go): the
	// validator reports itself stalled when its height has not moved for
	// that many nominal block intervals (0: DefaultStallBlocks).
	StallBlocks int
}

// Validate reports the first invalid field, wrapping ErrNilConfig or
// ErrBadRequest.
func (c *ValidatorConfig) Validate() error {
	switch {
	case c.Genesis == nil:
		return fmt.Errorf("%w: Genesis", ErrNilConfig)
	case c.Keys == nil || c.Keys.Peer == nil:
		return fmt.Errorf("%w: Keys", ErrNilConfig)
	case c.BlockTime < 0:
		return fmt.Errorf("%w: BlockTime %v is negative", ErrBadRequest, c.BlockTime)
	case c.SkipPerMille > 1000:
		return fmt.Errorf("%w: SkipPerMille %d (0 … 1000)", ErrBadRequest, c.SkipPerMille)
	case c.StallBlocks < 0:
		return fmt.Errorf("%w: StallBlocks %d is negative", ErrBadRequest, c.StallBlocks)
	}
	if err := c.Genesis.Validate(); err != nil {
		return err
	}
	if cip11.Hash(c.Keys.Peer.PubKey().Raw()) != c.Genesis.Validator.PeerPubKey {
		return fmt.Errorf("%w: the validator key is not the genesis validator's", ErrKeyFile)
	}
	if g := c.Genesis; g.Network() {
		for _, e := range g.EpochSets() {
			i := IndexIn(e.Set, g.Validator.PeerPubKey)
			if i < 0 {
				continue
			}
			sk, ok := c.Keys.Share(e.Epoch)
			if !ok || sk.PublicKey() != [96]byte(e.Set[i].ThresholdPubKey) {
				return fmt.Errorf("%w: the BLS key of epoch %d is not this validator's public share in its validator_set", ErrKeyFile, e.Epoch)
			}
		}
		if c.Broadcaster == nil {
			return fmt.Errorf("%w: Broadcaster (a network genesis runs on external consensus, D29)", ErrNilConfig)
		}
		return nil
	}
	if c.Keys.Threshold.PublicKey() != [96]byte(c.Genesis.Validator.ThresholdPubKey) {
		return fmt.Errorf("%w: the BLS key is not the genesis threshold key", ErrKeyFile)
	}
	return nil
}

// defaults fills the zero fields.
func (c *ValidatorConfig) defaults() {
	if c.BlockTime == 0 {
		c.BlockTime = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.StallBlocks == 0 {
		c.StallBlocks = DefaultStallBlocks
	}
	if c.Listen == "" {
		c.Listen = c.Genesis.Validator.QUIC
	}
	if c.Producer == nil {
		g := c.Genesis
		c.Producer = &Solo{Key: c.Keys.Threshold, Namespace: g.Namespace, SkipPerMille: c.SkipPerMille,
			Rand:     rand.New(rand.NewPCG(c.Seed, 0x5eed)),
			Schedule: seed.FixedSchedule{ViewsPerEpoch: uint64(g.Schedule.ViewsPerEpoch), FirstView: uint64(g.Schedule.FirstView), LastKnownEpoch: uint64(g.Schedule.LastKnownEpoch)}}
	}
}

// Validator is a single-validator CIP-11 chain node: the driver of one
// chain.Core (the synchronous core: mempool, block building, verifier, job
// tracker). It produces blocks with its Producer, keeps them in a block log,
// serves runners over QUIC (adapters/quic) and pushes every assignment
// after its block is committed (§10.1).
//
// One goroutine (loop) owns the core: HTTP requests and QUIC callbacks
// reach it as closures on a channel (do) or as events in a mailbox that
// never blocks its producers. A second goroutine (sender) hands committed
// blocks' pushes and cancels to the transport, so a runner that does not
// read can never stall block production. Neither holds a lock across I/O;
// the only locks are the mailboxes' (around a slice append).
type Validator struct {
	cfg  ValidatorConfig
	g    *Genesis
	p    cip11.Params
	hdr  chainlog.Header
	log  *slog.Logger
	now  func() time.Time
	dir  string
	tmp  bool
	prod Producer
	// sched is the one owner of the committed validator-set epochs (the
	// genesis's, then each in-band reconfiguration's, SPEC-NOTES C11) and
	// their §5.4 snapshots (D30): the loop extends it at the commit that
	// adds an epoch; the transport, the consensus application and HTTP
	// read its current Schedule lock-free.
	sched *Schedules
	// srv is the QUIC server; nil in PhaseOff (§14: no listener).
	srv   *cquic.Server
	phase Phase

	// storage: opened by open, closed by Close after both goroutines ended
	x       *blockexec.Executor
	pstore  *pebble.Store // x's store: its background errors stop the validator
	events  *eventLog     // transport job events (events.jsonl), history only
	blog    *blockLog
	jrnl    *journal
	archive *jobArchive

	core *chain.Core // owned by loop
	// included are the commitments the block being finalized carries
	// (FinalizeBlock; loop only), handed to the sender at its commit.
	included []chain.Assignment
	// spent is the time the steps of the open block took so far (loop
	// only): its execution time at commit.
	spent   time.Duration
	notHeld atomic.Uint64
	dupAcks atomic.Uint64
	seats   atomic.Uint64
	// fresh are the seats the last committed block created (§10.1 still
	// assigned, answered without the loop: Assigned)
	fresh atomic.Pointer[map[cip11.Hash]freshSeats]
	// catchUp is the engine's catch-up report; held the pushes held while
	// catching up (loop only); skipped the pushes skipped, by reason
	// (catchup.go).
	catchUp atomic.Pointer[CatchUp]
	held    []chain.Assignment
	skipped [3]atomic.Uint64
	height  atomic.Uint64
	failed  atomic.Pointer[error] // the core's sticky failure, for callers outside loop

	reqs   chan func()
	inbox  *mailbox[event]
	sendq  *mailbox[sendItem]
	stop   chan struct{} // closed by Close: loop and sender end
	done   chan struct{} // closed when loop has returned
	wg     sync.WaitGroup
	closed sync.Once

	dash      dashState            // the dashboard's record (dashboard_data.go)
	collector prometheus.Collector // the transport's, on cfg.Registerer
}

// sendItem is one committed block's transport work.
type sendItem struct {
	h       uint64
	pushes  []chain.Assignment
	cancels []chain.Cancel
	// included are the CIP-2 commitments (job, runner) the block carries
	// (the consensus engine's block; FinalizeBlock): after the block's pushes, a
	// reveal the server holds for one may go (§10.3,
	// quic.Server.ReleaseReveal). The sender releases them: a released
	// reveal is submitted, which runs on the loop.
	included []chain.Assignment
}

type eventKind uint8

const (
	evPushed eventKind = iota
	evPushFailed
	evCancelled
	evAck
	evOutcome
)

// event is a transport observation on its way to the loop.
type event struct {
	kind eventKind
	at   time.Time
	h    uint64
	a    chain.Assignment
	err  error
	x    chain.Cancel
	ack  wire.AckStatus
	o    cquic.Outcome
}

// NewValidator opens (or creates) the data directory, recovers the block
// log against the store, and starts the QUIC server and the validator's
// goroutines. ctx bounds start-up only; Close stops the validator.
func NewValidator(cfg ValidatorConfig) (*Validator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	v := &Validator{
		cfg: cfg, g: cfg.Genesis, p: cfg.Genesis.P(), hdr: cfg.Genesis.Header(), log: cfg.Logger, now: cfg.Now,
		dir: cfg.DataDir, prod: cfg.Producer,
		reqs: make(chan func()), inbox: newMailbox[event](maxInbox), sendq: newMailbox[sendItem](maxSendBacklog),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if v.dir == "" {
		d, err := os.MkdirTemp("", "cip11-validator-")
		if err != nil {
			return nil, err
		}
		v.dir, v.tmp = d, true
	}
	created, err := v.open()
	if err != nil {
		v.closeStorage()
		v.removeCreated(created)
		return nil, err
	}
	v.wg.Add(2)
	go v.loop()
	go v.sender()
	return v, nil
}

// removeCreated removes what a failed first start created, so that a
// failed start leaves no new files behind.
func (v *Validator) removeCreated(created []string) {
	if v.tmp {
		os.RemoveAll(v.dir)
		return
	}
	for i := len(created) - 1; i >= 0; i-- {
		os.RemoveAll(created[i])
	}
}

func (v *Validator) closeStorage() {
	if v.x != nil {
		v.x.Close()
		v.x = nil
	}
	if v.blog != nil {
		v.blog.close()
		v.blog = nil
	}
	if v.jrnl != nil {
		v.jrnl.close()
		v.jrnl = nil
	}
	if v.archive != nil {
		v.archive.close()
		v.archive = nil
	}
	if v.events != nil {
		v.events.close()
		v.events = nil
	}
}

// open builds the storage and the core and recovers (§8.1 crash recovery);
// it returns the paths it created, for removal if the start fails.
func (v *Validator) open() (created []string, err error) {
	mk := func(p string) string {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			created = append(created, p)
		}
		return p
	}
	if _, err := os.Stat(v.dir); errors.Is(err, os.ErrNotExist) {
		created = append(created, v.dir)
	}
	if err := os.MkdirAll(v.dir, 0o755); err != nil {
		return created, err
	}
	sync := !v.cfg.NoSync
	mode := pebble.SyncAlways
	if !sync {
		mode = pebble.SyncNever
	}
	statePath, blocksPath, jobsPath, archPath := mk(filepath.Join(v.dir, "state")), mk(filepath.Join(v.dir, "blocks.jsonl")),
		mk(filepath.Join(v.dir, "jobs.jsonl")), mk(filepath.Join(v.dir, "jobs"))
	mk(filepath.Join(v.dir, "events.jsonl"))
	mk(filepath.Join(v.dir, "blocks.times"))
	x, err := blockexec.New(v.hdr, blockexec.Options{SnapshotCache: 8, OpenStore: func(h chainlog.Header) (store.Store, error) {
		ps, err := pebble.Open(statePath, pebble.Options{Sync: mode, Logger: v.log, ReputationConfig: &state.ReputationConfig{
			Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}})
		if err == nil {
			v.pstore = ps
		}
		return ps, err
	}})
	if err != nil {
		return created, err
	}
	v.x = x
	if v.archive, err = openArchive(archPath, v.log); err != nil {
		return created, err
	}
	specs, err := readJournal(jobsPath)
	if err != nil {
		return created, err
	}
	if err := v.recover(blocksPath, specs, sync); err != nil {
		return created, err
	}
	if v.phase, err = PhaseOf(v.p); err != nil {
		return created, err
	}
	if !v.phase.Transport() { // §14: transport off, no listener; poll only
		v.log.Info("CIP11_TRANSPORT_ENABLED is off: no QUIC listener, runners poll", "phase", v.phase)
		v.cfg.Metrics.SetHeight(v.core.Height())
		return created, nil
	}
	srv, err := cquic.NewServer(context.Background(), cquic.ServerConfig{
		Key: v.cfg.Keys.Peer, ChainID: uint64(v.g.ChainID), Params: v.p,
		Registry: committedRegistry{v.x.Store().Registry(), &v.height}, Validators: v.sched,
		TxDecoder: chain.TxCodec{ChainID: uint64(v.g.ChainID)}, TxValidator: chain.TxCodec{ChainID: uint64(v.g.ChainID)}, Mempool: (*validatorMempool)(v),
		OnOutcome: v.onOutcome, OnAck: v.onAck, OnRefuse: func(r wire.GoodbyeReason) { v.dash.refuse(r, v.now()) },
		OnPushError: v.onPushError, OnPushed: v.onPushed, PushWindow: v.cfg.PushWindow, Logger: v.log,
		Listen: v.cfg.Listen, RevealOpen: v.revealOpen(),
	}, v.core.Height())
	if err != nil {
		return created, err
	}
	v.srv = srv
	if v.cfg.Registerer != nil {
		v.collector = newValidatorCollector(v, srv)
		if err := v.cfg.Registerer.Register(v.collector); err != nil {
			srv.Close()
			v.collector = nil
			return created, fmt.Errorf("transport metrics: %w", err)
		}
	}
	v.cfg.Metrics.SetHeight(v.core.Height())
	return created, nil
}

// revealOpen is the server's reveal-window test (§10.3). With external consensus
// the window of a push opens only when a committed block includes its
// commitment (ReleaseReveal from FinalizeBlock): never on its own, and not
// by the server's default, the block after the commitment was forwarded,
// which a block without it can be. Without one the default stands (the
// commitment's admission releases at once, AdmitTx).
func (v *Validator) revealOpen() func(cip11.Hash, uint64) bool {
	if v.cfg.Broadcaster == nil {
		return nil
	}
	return func(cip11.Hash, uint64) bool { return false }
}

// recover builds the core and brings it level with the block log and the
// journal: journaled jobs first, then every logged block streamed through
// the core (Restore), the log's last block re-executed if the store is one
// behind (RecoverTail), and the journal compacted to the jobs still open.
func (v *Validator) recover(blocksPath string, specs []*chain.JobSpec, sync bool) error {
	core, err := chain.New(chain.Config{Params: v.p, ChainID: uint64(v.g.ChainID), Runners: v.g.chainRunners(),
		Key: v.cfg.Keys.Peer, Exec: v.x, Log: blogPort{v}, Journal: journalPort{v}, Archive: v.archive,
		RetainBlocks: v.cfg.RetainBlocks, Logger: v.log, History: historyPort{v}, ModeA: v.p.PresenceHardExcludeEnabled,
		Admin: v.g.ReconfigAdmin, ExternalMempool: v.cfg.Broadcaster != nil, RetainHeight: v.cfg.RetainHeight})
	if err != nil {
		return err
	}
	v.core = core
	for _, s := range specs {
		core.LoadJob(s)
	}
	sh, ok := v.x.LastCommitted()
	if !ok {
		sh = 0
	}
	var tail *chainlog.Block
	var tailAt time.Time
	var history []job.BlockSummary // the log's last blocks, for the dashboard
	// the genesis's epochs, then the reconfigurations the block log holds
	if v.sched, err = NewSchedules(ScheduleConfig{Genesis: v.g, Keys: v.cfg.Keys, KeyFile: v.cfg.KeyFile, Logger: v.log}); err != nil {
		return err
	}
	restore := func(b *chainlog.Block, at time.Time) error {
		h := uint64(b.Height)
		if _, err := v.noteEpochs(b); err != nil {
			return err
		}
		v.sched.noteBeacon(b.ParentBeacon)
		history = append(history, job.BlockSummary{Height: h, Time: at, Txs: len(b.Txs), Assignments: len(b.Out.Assignments)})
		if len(history) > 2*dashHistoryBlocks {
			history = append(history[:0], history[len(history)-dashHistoryBlocks:]...)
		}
		switch {
		case tail != nil:
			return fmt.Errorf("%w: the store is at height %d, the block log at %d or more", ErrBlockLog, sh, h)
		case h <= sh:
			return core.Restore(b, at)
		case h == sh+1 && v.cfg.Broadcaster != nil:
			// Under an engine the block is the engine's to replay: CometBFT
			// saves a block's FinalizeBlock responses after FinalizeBlock
			// returns (which appended it here) and calls Commit after that,
			// so a crash in between leaves no responses for h. Re-executed
			// here, the app would report h in Info, and CometBFT's handshake
			// would stop on "expected last ABCI responses at height h"; cut
			// off, the app reports sh and CometBFT replays h to it.
			v.log.Info("dropping the block log's last block: the store did not commit it, the engine replays it", "height", h)
			return errDropTail
		case h == sh+1:
			c := *b
			tail, tailAt = &c, at
			return nil
		}
		return fmt.Errorf("%w: the store is at height %d, the block log at %d", ErrBlockLog, sh, h)
	}
	blog, err := openBlockLog(blocksPath, v.hdr, sync, v.now, restore)
	if err != nil {
		return err
	}
	v.blog = blog
	if tail != nil {
		if err := core.RecoverTail(tail, tailAt); err != nil {
			return err
		}
		v.log.Info("recovered the last block from the block log", "height", tail.Height)
	}
	if core.Height() != sh && tail == nil {
		return fmt.Errorf("%w: the store is at height %d, the block log at %d", ErrBlockLog, sh, core.Height())
	}
	v.dash.start(v.now(), core.Height(), history)
	ev, err := openEventLog(filepath.Join(v.dir, "events.jsonl"), v.log, core.RestoreHistory)
	if err != nil {
		return err
	}
	v.events = ev
	keep := core.FinishRecovery()
	if v.jrnl, err = writeJournal(filepath.Join(v.dir, "jobs.jsonl"), keep, sync); err != nil {
		return err
	}
	v.height.Store(core.Height())
	if core.Height() > 0 || len(specs) > 0 {
		v.log.Info("recovered", "height", core.Height(), "journal", len(specs), "open_jobs", len(keep),
			"jobs_in_memory", core.InMemory())
	}
	return nil
}

// blogPort and journalPort hand the core the block log and journal that
// open creates after the core (recovery reads them through the core).
type blogPort struct{ v *Validator }

func (p blogPort) Append(b *chainlog.Block) error { return p.v.blog.Append(b) }

type journalPort struct{ v *Validator }

func (p journalPort) Append(spec []byte) error {
	if p.v.jrnl == nil {
		return fmt.Errorf("%w: the journal is not open", ErrClosed)
	}
	return p.v.jrnl.Append(spec)
}

// loop owns the core: it runs requests and drains the transport's events.
func (v *Validator) loop() {
	defer v.wg.Done()
	defer close(v.done)
	for {
		select {
		case f := <-v.reqs:
			f()
		case <-v.inbox.ready:
			v.drain()
		case <-v.stop:
			return
		}
	}
}

// ErrBusy: the validator's loop did not take a request before the
// caller's context ended (it was committing a block, an fsync was slow).
// Nothing was done; the caller may retry. The HTTP API answers 503.
var ErrBusy = errors.New("node: busy")

// do is doCtx without a deadline: the consensus engine's steps and the
// in-process callers, which wait for the loop however long it takes.
func (v *Validator) do(fn func(c *chain.Core)) error { return v.doCtx(context.Background(), fn) }

// doCtx runs fn on the loop with the core and waits for it. It returns
// ErrClosed once the validator is closing, and ErrBusy (wrapping ctx's
// cause) when ctx ends before the loop takes fn; once taken, fn runs to
// its end and doCtx waits for it (fn writes its caller's variables).
func (v *Validator) doCtx(ctx context.Context, fn func(c *chain.Core)) error {
	ran := make(chan struct{})
	select {
	case v.reqs <- func() { fn(v.core); close(ran) }:
	case <-v.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrBusy, context.Cause(ctx))
	}
	<-ran
	return nil
}

// drain applies the transport's events to the core (loop only).
func (v *Validator) drain() {
	m := v.cfg.Metrics
	for _, e := range v.inbox.take() {
		switch e.kind {
		case evPushed:
			v.core.Pushed(e.a, e.h, e.at)
		case evPushFailed:
			v.core.PushFailed(e.a, e.h, e.err, e.at)
			v.log.Debug("push failed", "job", e.a.JobID, "runner", e.a.Runner, "err", e.err)
		case evCancelled:
			v.core.Cancelled(e.x, e.at)
		case evAck:
			if d, ok := v.core.Acked(e.a.JobID, e.a.Runner, e.ack, e.at); ok && m != nil {
				m.ObserveAck(d)
			}
		case evOutcome:
			kind := v.core.Outcome(e.o.JobID, e.o.Runner, e.o.Outcome, e.o.Height, e.o.Err, e.at)
			if kind != job.EventSuccess {
				v.log.Debug("push outcome", "job", e.o.JobID, "runner", e.o.Runner, "outcome", kind, "err", e.o.Err)
			}
		}
	}
	v.events.flush()
}

// historyPort hands the core the event log open creates after the core.
type historyPort struct{ v *Validator }

func (p historyPort) Record(job cip11.Hash, e job.Event) { p.v.events.Record(job, e) }

// sender hands each committed block's pushes and cancels to the transport,
// in block order, and reports what happened back through the inbox.
func (v *Validator) sender() {
	defer v.wg.Done()
	for {
		select {
		case <-v.sendq.ready:
		case <-v.stop:
			return
		}
		for _, it := range v.sendq.take() {
			v.send(it)
		}
	}
}

func (v *Validator) send(it sendItem) {
	if v.srv == nil { // PhaseOff: assignments are delivered by poll only (§14)
		return
	}
	defer func() { // after Applied has ticked the server to the block
		for _, c := range it.included {
			_ = v.srv.ReleaseReveal(c.JobID, c.Runner) // ErrNoSuchJob: no push of it here
		}
	}()
	as := make([]cquic.Assignment, len(it.pushes))
	for i, a := range it.pushes {
		as[i] = cquic.Assignment{JobID: a.JobID, JobSpec: a.JobSpec, AssignmentHeight: a.AssignmentHeight,
			DeadlineBlock: a.DeadlineBlock, Runner: a.Runner, MultiRunner: a.MultiRunner}
	}
	// Applied routes at once and returns only routing errors; the sends
	// report through OnPushed and OnPushError.
	errs := v.srv.Applied(it.h, as)
	for i, a := range it.pushes {
		if i < len(errs) && errs[i] != nil && v.g.Network() && errors.Is(errs[i], cquic.ErrNotPresent) {
			v.notHeld.Add(1) // another validator of Sub(R) delivers (D33)
			continue
		}
		if i < len(errs) && errs[i] != nil {
			v.inbox.post(event{kind: evPushFailed, at: v.now(), h: it.h, a: a, err: errs[i]})
		}
	}
	for _, x := range it.cancels {
		if err := v.srv.Cancel(x.JobID, x.Runner, x.Reason); err == nil {
			v.inbox.post(event{kind: evCancelled, at: v.now(), x: x})
		}
	}
}

// Height is the last committed block height.
func (v *Validator) Height() uint64 { return v.height.Load() }

// Addr is the QUIC UDP address runners dial; nil in PhaseOff (no
// listener).
func (v *Validator) Addr() net.Addr {
	if v.srv == nil {
		return nil
	}
	return v.srv.Addr()
}

// Phase is the §14 phase the validator runs (PhaseOf its genesis flags).
func (v *Validator) Phase() Phase { return v.phase }

// PeerKey is the validator's Ed25519 peer_pubkey (§5.4).
func (v *Validator) PeerKey() validators.PeerKey {
	return validators.PeerKey(v.g.Validator.PeerPubKey) // the key's (Validate)
}

// PushWindow is the push pacing in effect (quic.Server.PushWindow):
// unanswered assignments in flight per block push, or -1 for all at once;
// 0 in PhaseOff (no pushes).
func (v *Validator) PushWindow() int {
	if v.srv == nil {
		return 0
	}
	return v.srv.PushWindow()
}

// ValidatorSetHash is the active snapshot's validator_set_hash (§5.3).
func (v *Validator) ValidatorSetHash() cip11.Hash { return v.activeSnapshot(v.Height()).Hash() }

// activeSnapshot is the §5.4 snapshot active at h.
func (v *Validator) activeSnapshot(h uint64) *validators.Snapshot {
	return v.sched.Load().At(h).Snapshot
}

// Dir is the data directory.
func (v *Validator) Dir() string { return v.dir }

// Server is the QUIC server (for tests and metrics); nil in PhaseOff.
func (v *Validator) Server() *cquic.Server { return v.srv }

// Err is the validator's failure, if its core failed (a block-log append,
// state commit or journal write that did not succeed): it wraps
// chain.ErrFailed. Run returns it; a failed validator accepts nothing more.
func (v *Validator) Err() error {
	if p := v.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Run produces a block every BlockTime until ctx ends (nil), the core
// fails or the store reports a background failure (a full disk: its
// error, wrapping ErrFailed). With external consensus it produces nothing and only
// watches the store.
func (v *Validator) Run(ctx context.Context) error {
	if v.cfg.Broadcaster != nil {
		return v.watch(ctx)
	}
	t := time.NewTicker(v.cfg.BlockTime)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-v.pstore.Failed():
			return v.storeFailed()
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

// storeFailed records the state store's background failure as the
// validator's (Run, watch) and returns it.
func (v *Validator) storeFailed() error {
	err := fmt.Errorf("%w: state store: %w", ErrFailed, v.pstore.Err())
	v.failed.CompareAndSwap(nil, &err)
	v.log.Error("the state store failed; the validator stops", "err", err)
	return err
}

// watch is Run under an Broadcaster: it returns when ctx ends (nil), the store
// fails, or a consensus step failed the core (its sticky error), so that
// an operator's process stops rather than idling behind a halted engine.
func (v *Validator) watch(ctx context.Context) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-v.pstore.Failed():
			return v.storeFailed()
		case <-t.C:
			if err := v.Err(); err != nil {
				return err
			}
		}
	}
}

// Close stops the goroutines and the server, then closes the storage
// (removing a temporary data directory). It is idempotent.
func (v *Validator) Close() error {
	var err error
	v.closed.Do(func() {
		close(v.stop)
		if v.collector != nil {
			v.cfg.Registerer.Unregister(v.collector)
		}
		if v.srv != nil {
			err = v.srv.Close() // unblocks a sender inside a push
		}
		v.wg.Wait()
		v.closeStorage()
		if v.tmp {
			os.RemoveAll(v.dir)
		}
	})
	return err
}

// commit commits the applied block and hands its pushes to the sender
// (loop only); spent is what the block's earlier steps took. It returns
// the block's retain height (chain.Committed.RetainHeight).
func (v *Validator) commit(c *chain.Core, spent time.Duration) (uint64, error) {
	start := v.now()
	res, err := c.Commit(start)
	if err != nil {
		return 0, v.fail(c, err)
	}
	b := res.Block
	h := uint64(b.Height)
	applied := v.now()
	c.MarkApplied(res, applied)
	v.height.Store(h)
	exec := spent + applied.Sub(start)
	c.NoteBlock(job.BlockSummary{Height: h, Time: applied, Txs: len(b.Txs), Assignments: len(b.Out.Assignments),
		Pushed: len(res.Pushes), ExecMillis: float64(exec.Microseconds()) / 1000})
	v.seats.Add(uint64(len(res.Pushes)))
	fresh := make(map[cip11.Hash]freshSeats, len(res.Pushes))
	for _, a := range res.Pushes {
		f := fresh[a.JobID]
		f.height = a.AssignmentHeight
		f.runners = append(f.runners, a.Runner)
		fresh[a.JobID] = f
	}
	v.fresh.Store(&fresh)
	pushes := v.gatePushes(c, h, res.Pushes) // catching up: none for the past
	if f := v.cfg.OnPushes; f != nil {
		f(h, pushes)
	}
	v.sched.noteBeacon(b.ParentBeacon)
	if _, err := v.noteEpochs(b); err != nil { // the executor checked the set: not expected
		v.log.Error("the committed epoch cannot enter the schedule", "height", h, "err", err)
	}
	if !v.sendq.post(sendItem{h: h, pushes: pushes, cancels: res.Cancels, included: v.included}) { // also ticks the server to h
		v.log.Warn("the transport is stuck: a committed block's pushes are dropped", "height", h, "pushes", len(pushes),
			"backlog", maxSendBacklog)
	}
	v.included = nil
	v.log.Debug("block", "height", h, "txs", len(b.Txs), "assignments", len(b.Out.Assignments), "heartbeats", len(b.Heartbeats),
		"pushes", len(pushes), "cancels", len(res.Cancels))
	if m := v.cfg.Metrics; m != nil {
		m.ObserveBlock(exec)
		m.SetJobs(c.Counts())
		m.BlockProduced(h)
		m.SetMempool(v.mempoolLen(c))
		if len(b.Out.Certificates) > 0 || v.p.PresenceHardExcludeEnabled {
			m.CertificatesExecuted(chain.CertificateOutcomes(b))
			if proven, _, err := c.ModeACoverage(); err == nil {
				m.SetProvenRunners(proven)
			}
		}
	}
	for _, o := range b.Out.Certificates {
		if o.Result != blockexec.CertAccepted {
			v.log.Info("presence certificate rejected (§8.3)", "height", h, "runner", o.Runner, "result", o.Result, "counted", o.Counted)
		}
	}
	return res.RetainHeight, nil
}

// noteEpochs publishes the schedule with the epoch a committed block's
// reconfiguration emits (§5.4 ValidatorSetSnapshot(E+1), activated at its
// height; SPEC-NOTES C11) and reports whether it had one (loop only: the
// schedule's one writer of epochs). The new epoch's share is read from
// the key file if the keys lack it, with no lock held.
func (v *Validator) noteEpochs(b *chainlog.Block) (bool, error) {
	added := false
	for _, tx := range b.Txs {
		r := tx.Reconfigure
		if r == nil {
			continue
		}
		es := append(v.sched.Load().EpochSets(), EpochSetOf(r))
		if _, err := v.sched.Extend(es); err != nil {
			return added, fmt.Errorf("height %d: epoch %d: %w", b.Height, r.Epoch, err)
		}
		e := v.sched.Load().Last()
		v.log.Info("validator set snapshot committed (ValidatorSetSnapshot)", "height", b.Height, "epoch", r.Epoch,
			"activation_height", r.Activation, "validators", len(r.Set), "member", e.Index >= 0, "share", e.Share != nil)
		added = true
	}
	return added, nil
}

// Epochs are the chain's committed validator-set epochs, ascending: the
// genesis's, then each committed in-band reconfiguration's (SPEC-NOTES
// C11). Nil on a single-validator chain.
func (v *Validator) Epochs() []EpochSet {
	if v.sched == nil {
		return nil
	}
	return v.sched.Load().EpochSets()
}

// Schedules is the owner of the committed epoch schedule (read its
// current Schedule with Load; the validator's loop extends it at the
// commit that adds an epoch).
func (v *Validator) Schedules() *Schedules { return v.sched }

// fail records a sticky core failure for callers outside the loop.
func (v *Validator) fail(c *chain.Core, err error) error {
	if cerr := c.Err(); cerr != nil && v.failed.CompareAndSwap(nil, &cerr) {
		v.log.Error("the chain core failed; the validator stops", "err", cerr) // once
	}
	return err
}

func (v *Validator) onOutcome(o cquic.Outcome) {
	v.inbox.post(event{kind: evOutcome, at: v.now(), o: o})
}

// onPushError records a paced push that failed after Applied returned.
func (v *Validator) onPushError(a cquic.Assignment, err error) {
	v.inbox.post(event{kind: evPushFailed, at: v.now(), h: v.Height(), err: err,
		a: chain.Assignment{JobID: a.JobID, Runner: a.Runner}})
}

// onPushed records a JobAssignment the server sent (§10.1).
func (v *Validator) onPushed(a cquic.Assignment) {
	v.inbox.post(event{kind: evPushed, at: v.now(), h: v.Height(), a: chain.Assignment{JobID: a.JobID, Runner: a.Runner}})
}

// onAck is a verified JobAck (§10.2): push latency is measured from the
// block's commit to here.
func (v *Validator) onAck(id cip11.Hash, r cip11.Address, st wire.AckStatus) {
	if st.Kind == wire.AckDuplicate {
		v.dupAcks.Add(1) // the runner took another validator's push first (D33)
	}
	v.inbox.post(event{kind: evAck, at: v.now(), a: chain.Assignment{JobID: id, Runner: r}, ack: st})
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

// SubmitTx is transaction admission (POST /submit and the QUIC result
// path): decode and verify, then hand to the mempool or the verifier. With
// external consensus the transaction goes to the engine's mempool, whose admission
// check is AdmitTx on every validator.
func (v *Validator) SubmitTx(raw []byte) (*Tx, error) { return v.submitTx(context.Background(), raw) }

// submitTx is SubmitTx for a caller with a context (the HTTP API): without
// external consensus, ErrBusy when the loop does not take the admission before ctx
// ends.
func (v *Validator) submitTx(ctx context.Context, raw []byte) (*Tx, error) {
	if e := v.cfg.Broadcaster; e != nil {
		tx, err := DecodeTx(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return tx, e.BroadcastTx(raw)
	}
	return v.admitTx(ctx, raw)
}

// AdmitTx is the core's transaction admission (SubmitTx without external consensus;
// the engine's mempool check with one).
func (v *Validator) AdmitTx(raw []byte) (*Tx, error) { return v.admitTx(context.Background(), raw) }

func (v *Validator) admitTx(ctx context.Context, raw []byte) (*Tx, error) {
	var tx *Tx
	var err error
	if derr := v.doCtx(ctx, func(c *chain.Core) { tx, err = c.SubmitTx(raw, v.now()) }); derr != nil {
		return nil, derr
	}
	if err == nil && tx != nil && (tx.Kind == TxCommit || tx.Kind == TxReveal) {
		v.cfg.Metrics.ResultForwarded()
	}
	if err == nil && tx != nil && tx.Kind == TxCommit && v.srv != nil && v.cfg.Broadcaster == nil {
		// §10.3: a reveal the server holds for this runner's push may go
		// once the commitment is included (issue 18 item 7). On one
		// validator its core is the chain: the admitted commitment is the
		// state every later block executes against, no block carries it
		// and no mempool gossips, so admission is its inclusion. With
		// external consensus admission is only CometBFT's mempool (gossiped at once):
		// the reveal waits for a committed block that carries the
		// commitment (FinalizeBlock, released at its commit).
		_ = v.srv.ReleaseReveal(tx.JobID, tx.From)
	}
	return tx, err
}

// SubmitJob accepts a job: the spec is checked, written to jobs.jsonl
// (fsynced unless NoSync) and queued for the next block. With external consensus
// the spec goes to the engine's mempool, whose admission check is
// AdmitJob on every validator.
func (v *Validator) SubmitJob(spec *JobSpec) (cip11.Hash, error) {
	return v.submitJob(context.Background(), spec)
}

// submitJob is SubmitJob for a caller with a context (the HTTP API):
// without external consensus, ErrBusy when the loop does not take the admission
// before ctx ends.
func (v *Validator) submitJob(ctx context.Context, spec *JobSpec) (cip11.Hash, error) {
	if e := v.cfg.Broadcaster; e != nil {
		if err := spec.Check(); err != nil {
			return spec.ID(), err
		}
		return spec.ID(), e.BroadcastJob(spec.Encode())
	}
	return v.admitJob(ctx, spec)
}

// AdmitJob is the core's job admission (SubmitJob without external consensus; the
// engine's mempool check with one, where the job is journaled and tracked
// but pooled only in the engine's mempool).
func (v *Validator) AdmitJob(spec *JobSpec) (cip11.Hash, error) {
	return v.admitJob(context.Background(), spec)
}

func (v *Validator) admitJob(ctx context.Context, spec *JobSpec) (cip11.Hash, error) {
	var id cip11.Hash
	var err error
	if derr := v.doCtx(ctx, func(c *chain.Core) {
		id, err = c.SubmitJob(spec, v.now())
		if err != nil && c.Err() != nil {
			err = v.fail(c, err)
		}
	}); derr != nil {
		return id, derr
	}
	return id, err
}

// ModeACoverage is the §8.3 proven-until coverage after the last applied
// block: registered runners whose presence_proven_until covers the next
// block, and registered runners.
func (v *Validator) ModeACoverage() (proven, registered int, err error) {
	if derr := v.do(func(c *chain.Core) { proven, registered, err = c.ModeACoverage() }); derr != nil {
		return 0, 0, derr
	}
	return proven, registered, err
}

// Stats returns a copy of the cumulative counts.
func (v *Validator) Stats() Stats {
	var s Stats
	_ = v.do(func(c *chain.Core) { s = c.Stats() })
	return s
}

// JobStates counts jobs by state, and lists those not terminal.
func (v *Validator) JobStates() (counts map[job.State]int, open []cip11.Hash) {
	_ = v.do(func(c *chain.Core) { counts, open = c.Counts(), c.Open() })
	return counts, open
}

// Job returns a job's view (an ended job's from the archive once it left
// memory).
func (v *Validator) Job(id cip11.Hash) (jv job.View, ok bool) {
	jv, ok, _ = v.job(context.Background(), id)
	return jv, ok
}

// job is Job for a caller with a context (the HTTP API).
func (v *Validator) job(ctx context.Context, id cip11.Hash) (jv job.View, ok bool, err error) {
	err = v.doCtx(ctx, func(c *chain.Core) { jv, ok = c.Job(id) })
	return jv, ok, err
}

// Settled reports whether runner's part of job is over.
func (v *Validator) Settled(id cip11.Hash, runner cip11.Address) (settled bool, err error) {
	err = v.do(func(c *chain.Core) { settled = c.Settled(id, runner) })
	return settled, err
}

// RunnerJobs is the poll fallback (§14): the signed assignments of every
// job whose current committee holds runner and whose result it has not
// delivered. In Phase3 (CIP11_POLL_DISABLED) it is ErrPollDisabled, the
// HTTP API's 410 Gone.
func (v *Validator) RunnerJobs(runner cip11.Address) (out []*wire.JobAssignment, err error) {
	return v.runnerJobs(context.Background(), runner)
}

// runnerJobs is RunnerJobs for a caller with a context (the HTTP API).
func (v *Validator) runnerJobs(ctx context.Context, runner cip11.Address) (out []*wire.JobAssignment, err error) {
	if v.p.PollDisabled {
		return nil, ErrPollDisabled
	}
	if derr := v.doCtx(ctx, func(c *chain.Core) { out, err = c.RunnerJobs(runner) }); derr != nil {
		return nil, derr
	}
	return out, err
}

// RunnerJobsFor is RunnerJobs for a runner that named its public key
// (httpapi.KeyedPoller): the key is learned first, so a validator that
// restarted answers before the runner's next transaction.
func (v *Validator) RunnerJobsFor(runner cip11.Address, key wire.PubKey) (out []*wire.JobAssignment, err error) {
	return v.runnerJobsFor(context.Background(), runner, key)
}

// runnerJobsFor is RunnerJobsFor for a caller with a context (the HTTP API).
func (v *Validator) runnerJobsFor(ctx context.Context, runner cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error) {
	if a, aerr := key.RunnerAddress(); aerr != nil || a != runner {
		return nil, fmt.Errorf("%w: the key is not runner %s's", ErrBadRequest, runner)
	}
	if derr := v.doCtx(ctx, func(c *chain.Core) { c.LearnRunnerKey(runner, key) }); derr != nil {
		return nil, derr
	}
	return v.runnerJobs(ctx, runner)
}

// Status is the node's identity and counts (GET /status).
func (v *Validator) Status() httpapi.Status {
	st, _ := v.status(context.Background())
	return st
}

// status is Status for a caller with a context (the HTTP API): ErrBusy
// when the loop does not take the read before ctx ends.
func (v *Validator) status(ctx context.Context) (httpapi.Status, error) {
	var h uint64
	var mp, n, connected, present int
	quicAddr := "off"
	if v.srv != nil {
		quicAddr, connected, present = v.srv.Addr().String(), len(v.srv.ConnectedRunners()), len(v.srv.Present())
	}
	facts, engine := v.consensusFacts()
	var last job.BlockSummary
	var applied bool
	if err := v.doCtx(ctx, func(c *chain.Core) {
		h, mp = c.Height(), v.mempoolLen(c)
		if view, err := v.x.Store().Registry().At(h); err == nil {
			n = len(view.ActiveRunners())
		}
		last, applied = lastApplied(c)
	}); errors.Is(err, ErrBusy) {
		return httpapi.Status{}, err
	}
	snap := v.activeSnapshot(h)
	st := httpapi.Status{
		ChainID: uint64(v.g.ChainID), Height: h, BlockTimeMillis: v.blockTimeMillis(),
		QUICAddr: quicAddr, PeerKey: fmt.Sprintf("%x", v.PeerKey()), ValidatorSetHash: snap.Hash(),
		SubsetEpoch: snap.Epoch(), Runners: n, Connected: connected, Present: present,
		Mempool: mp, PollDisabled: v.p.PollDisabled, Version: "cip11 r1.3.1",
	}
	v.addHealth(&st, v.now(), last, applied, facts, engine) // health.go
	return st, nil
}

// mempoolLen is what waits for a block: the engine's mempool when it is
// the only one and reports its size (MempoolSizer), else the core's pool.
func (v *Validator) mempoolLen(c *chain.Core) int {
	if e, ok := v.cfg.Broadcaster.(MempoolSizer); ok {
		return e.Size()
	}
	return c.MempoolLen()
}

// committedRegistry is the QUIC server's view of the registry: views at
// heights the validator has committed, never the block the loop is
// executing (quic.CommittedRegistry). A later height wraps
// state.ErrUnknownHeight, which admission answers retryably.
type committedRegistry struct {
	reg    state.Registry
	height *atomic.Uint64
}

func (r committedRegistry) At(h uint64) (state.RegistryView, error) {
	if c := r.height.Load(); h > c {
		return nil, fmt.Errorf("%w: height %d is not committed yet (at %d)", state.ErrUnknownHeight, h, c)
	}
	return r.reg.At(h)
}

// blockTimeMillis is the configured block time; 0 under external consensus, whose
// consensus decides when blocks come.
func (v *Validator) blockTimeMillis() int64 {
	if v.cfg.Broadcaster != nil {
		return 0
	}
	return v.cfg.BlockTime.Milliseconds()
}
