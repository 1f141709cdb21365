package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/pebble"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
	"github.com/prometheus/client_golang/prometheus"
)

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
	x      *blockexec.Executor
	pstore *pebble.Store // x's store: its background errors stop the validator
	// reg and ps are the store's registry and the store, for readers off
	// the loop (InstallSnapshot replaces the store); swapped is signalled
	// when it does, for watchers of ps's failure (Run).
	reg      atomic.Pointer[registryRef]
	ps       atomic.Pointer[pebble.Store]
	swapped  chan struct{}
	snap     snapshotter   // snapshots and retention (snapshot.go)
	earliest atomic.Uint64 // the lowest height the block log holds
	// lastRetain is the retain height the last commit returned;
	// restoredFrom the height of the snapshot installed (InstallSnapshot).
	lastRetain, restoredFrom atomic.Uint64
	events                   *eventLog // transport job events (events.jsonl), history only
	blog                     *blockLog
	jrnl                     *journal
	archive                  *jobArchive

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
	// facts is what GET /status reads of the core, published by the loop
	// after every step (loopFacts): /status never waits for the loop
	facts   atomic.Pointer[loopFacts]
	failed  atomic.Pointer[error] // the core's sticky failure, for callers outside loop
	failedc chan struct{}         // closed when failed is first set (setFailed)

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
		stop: make(chan struct{}), done: make(chan struct{}), failedc: make(chan struct{}), swapped: make(chan struct{}, 1),
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
	v.snap.jobs = make(chan snapJob, 1)
	v.publishFacts() // before the loop owns the core
	v.wg.Add(3)
	go v.loop()
	go v.sender()
	go v.snapshotWriter()
	return v, nil
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
			v.publishFacts()
		case <-v.stop:
			return
		}
	}
}

// loopFacts are the core's facts GET /status shows, as of the loop's last
// step: the height, the core's mempool, the active runners at the height
// and the newest block this process applied (ok false: none yet).
type loopFacts struct {
	height, runners uint64
	mempool         int
	last            job.BlockSummary
	ok              bool
}

// publishFacts stores the core's facts for Status (loop only, or before
// the loop starts); a new value only when one of them changed.
func (v *Validator) publishFacts() {
	c := v.core
	h, mp := c.Height(), c.MempoolLen()
	last, ok := c.LastBlock()
	old := v.facts.Load()
	if old != nil && old.height == h && old.mempool == mp && old.ok == ok && old.last == last {
		return
	}
	f := &loopFacts{height: h, mempool: mp, last: last, ok: ok}
	if old != nil && old.height == h {
		f.runners = old.runners
	} else if view, err := v.registry().At(h); err == nil {
		f.runners = uint64(len(view.ActiveRunners()))
	}
	v.facts.Store(f)
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
	case v.reqs <- func() { fn(v.core); v.publishFacts(); close(ran) }:
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

// RecordOutput implements chain.OutputHistory.
func (p historyPort) RecordOutput(id cip11.Hash, output []byte) { p.v.events.RecordOutput(id, output) }

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
		case <-v.ps.Load().Failed():
			return v.storeFailed()
		case <-v.swapped:
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
	err := fmt.Errorf("%w: state store: %w", ErrFailed, v.ps.Load().Err())
	v.setFailed(err)
	v.log.Error("the state store failed; the validator stops", "err", err)
	return err
}

// watch is Run under external consensus: it returns when ctx ends (nil),
// the store fails, or a consensus step failed the core (its sticky error),
// so that an operator's process stops rather than idling behind a halted
// engine. It waits on both failures; it polls nothing.
func (v *Validator) watch(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-v.ps.Load().Failed():
			return v.storeFailed()
		case <-v.swapped: // InstallSnapshot: watch the new store
		case <-v.failedc:
			return v.Err()
		}
	}
}

// setFailed records err as the validator's sticky failure unless one is
// recorded already (the first stays), and wakes watch; it reports whether
// err was recorded.
func (v *Validator) setFailed(err error) bool {
	if !v.failed.CompareAndSwap(nil, &err) {
		return false
	}
	close(v.failedc)
	return true
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
	v.maybeSnapshot(h, b.Out.StateDigest)
	if h%eventsCompactEvery == 0 {
		v.events.compact(c.Tracks)
		v.compactJournal(c)
	}
	retain := max(res.RetainHeight, v.retain(h))
	v.earliest.Store(v.blog.base.Height + 1)
	v.lastRetain.Store(retain)
	v.log.Debug("block", "height", h, "txs", len(b.Txs), "assignments", len(b.Out.Assignments), "heartbeats", len(b.Heartbeats),
		"pushes", len(pushes), "cancels", len(res.Cancels))
	if m := v.cfg.Metrics; m != nil {
		m.ObserveBlock(exec)
		m.SetJobs(c.Counts())
		m.BlockProduced(h)
		m.SetMempool(v.mempoolLen(c.MempoolLen()))
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
	return retain, nil
}

// noteEpochs publishes the schedule with the epoch a committed block's
// reconfiguration emits (§5.4 ValidatorSetSnapshot(E+1), activated at its
// height; SPEC-NOTES C11) and reports whether it had one (loop only: the
// schedule's one writer of epochs). The new epoch's share is read from
// the key file if the keys lack it, with no lock held.
func (v *Validator) noteEpochs(b *chainlog.Block) (bool, error) {
	added := false
	for _, tx := range b.Txs {
		if r := tx.Reconfigure; r != nil {
			if err := v.noteReconf(uint64(b.Height), r); err != nil {
				return added, err
			}
			added = true
		}
	}
	return added, nil
}

// noteReconf publishes the schedule with the epoch reconfiguration r,
// committed at height h, emits (noteEpochs; loop only).
func (v *Validator) noteReconf(h uint64, r *chainlog.Reconfigure) error {
	es := append(v.sched.Load().EpochSets(), EpochSetOf(r))
	if _, err := v.sched.Extend(es); err != nil {
		return fmt.Errorf("height %d: epoch %d: %w", h, r.Epoch, err)
	}
	e := v.sched.Load().Last()
	v.log.Info("validator set snapshot committed (ValidatorSetSnapshot)", "height", h, "epoch", r.Epoch,
		"activation_height", r.Activation, "validators", len(r.Set), "member", e.Index >= 0, "share", e.Share != nil)
	return nil
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
	if cerr := c.Err(); cerr != nil && v.setFailed(cerr) {
		v.log.Error("the chain core failed; the validator stops", "err", cerr) // once
	}
	return err
}
