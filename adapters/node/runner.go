package node

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/executor"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// Chain is the runner's view of the chain and its transaction path: the
// finalized height, admission (POST /submit, §10.3), job state (for the
// rebroadcast schedule's "settled") and the poll fallback (§14). HTTPChain
// talks to a validator's API; the devnet also uses the in-process
// validator directly (LocalChain).
type Chain interface {
	Height(ctx context.Context) (uint64, error)
	Submit(ctx context.Context, tx []byte) error // a duplicate is not an error
	// Settled reports whether runner's result for job is included or the
	// job is terminal.
	Settled(ctx context.Context, job cip11.Hash, runner cip11.Address) (bool, error)
	Poll(ctx context.Context, runner cip11.Address) ([]*wire.JobAssignment, error)
	// LastHeartbeat is runner's on-chain last_heartbeat, the height of the
	// block that included its last heartbeat (§7.1); ok is false when it is
	// not registered. The §6.6 schedule runs from it (runnerview.go).
	LastHeartbeat(ctx context.Context, runner cip11.Address) (last uint64, ok bool, err error)
	// Assigned reports whether runner is still assigned to job at height,
	// the assignment_height of a push (§10.1).
	Assigned(ctx context.Context, job cip11.Hash, runner cip11.Address, height uint64) (bool, error)
}

// KeyedChain is a Chain whose poll names the runner's public key, so a
// validator that does not know it yet (it learns keys from transactions,
// and forgets them when it restarts) can sign the runner's assignments
// (§14). The runner uses it when its Chain has it.
type KeyedChain interface {
	PollKeyed(ctx context.Context, runner cip11.Address, key wire.PubKey) ([]*wire.JobAssignment, error)
}

// DefaultRunnerCapacity is a runner's capacity (§6.4) when
// RunnerConfig.MaxConcurrent is zero.
const DefaultRunnerCapacity = 16

// RunnerConfig configures a Runner process.
type RunnerConfig struct {
	Genesis *Genesis
	Key     *wire.RunnerKey
	Chain   Chain
	// Listen is the runner's UDP address (default ":0": every interface,
	// an ephemeral port, so validators on other hosts are reachable).
	Listen string
	// WorkTime is the demo executor's work time when the job spec has none
	// (50 ms); FailPerMille makes that many executions per thousand fail.
	WorkTime     time.Duration
	FailPerMille uint32
	// MaxConcurrent is the runner's capacity (§6.4; default
	// DefaultRunnerCapacity).
	MaxConcurrent int
	// Tick is how often the chain height is read (100 ms).
	Tick time.Duration
	// Validator overrides the genesis QUIC address of the validator.
	Validator string
	// PingSpread spreads the per-height HeartbeatPings over that much time
	// (quic.ClientConfig.PingSpread; default DefaultPingSpread, negative:
	// at once).
	PingSpread time.Duration
	// NoCertificates keeps a runner of a Mode-A chain from submitting
	// presence certificates (§8.3; devnet tests of the shadow posture):
	// it still collects receipts.
	NoCertificates bool
	Logger         *slog.Logger
	Seed           uint64
	// Executor runs each accepted job (docs/executor.md); nil: the demo
	// executor (executor.Demo) with WorkTime, FailPerMille and Seed.
	Executor executor.Executor
	// BlockTime is the block interval the runner assumes when it bounds an
	// execution by the job's deadline (default 1 s, the validator's): the
	// executor's context ends (deadline_block − height + 1) block times
	// after the execution starts, height the runner's finalized height
	// then, unless a §10.5 JobCancel ends it first.
	BlockTime time.Duration
}

// Runner is a runner process: a QUIC client to Sub(R) (adapters/quic),
// the on-chain heartbeat on its §6.6 schedule, a demo executor, result
// rebroadcast (§10.3) and polling by the genesis §14 phase (Phase.Polls):
// every new height in PhaseOff (the client then opens no socket) and
// Phase1, only without an admitted connection in Phase2, never in Phase3.
// A polled assignment goes through the client's job path
// (quic.Client.Deliver): one delivery, deduplicated by job_id with the
// pushes, checked (§10.1) and retained for rebroadcast (§10.3) like them.
type Runner struct {
	cfg    RunnerConfig
	phase  Phase
	cl     *cquic.Client
	hb     local.HeartbeatSchedule
	nonce  atomic.Uint64
	exe    executor.Executor
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup // loop, submit worker
	subq   *mailbox[[]byte]

	mu       sync.Mutex
	lastHB   uint64              // height of the last heartbeat sent
	hbSeen   uint64              // the last height heartbeat was called at
	chainHB  uint64              // the on-chain last_heartbeat last learned (§7.1)
	settled  map[cip11.Hash]bool // the submit worker's answers for jobs with retained results
	executed atomic.Int64
	active   atomic.Int64 // executions in progress
	polled   atomic.Int64 // assignments poll answers carried (PollAnswers)

	certMu sync.Mutex
	cert   certState  // §8.3 certificate schedule (certify)
	sets   *Schedules // the §5.4 view the client dials by (followEpochs extends it)
	dir    *cquic.StaticDirectory
	// epochsAt is the height the epochs were last read at (followEpochs;
	// the loop goroutine's).
	epochsAt uint64
	// wake makes the loop read the chain height at once (a push arrived
	// ahead of the runner's view, §10.1).
	wake chan struct{}
	clp  atomic.Pointer[cquic.Client] // cl, for the client's hooks (set after NewClient returns)
	// apiOf maps a validator to its HTTP API base, and hints is the chain
	// view told the heights of verified pongs (an HTTPChain over several
	// validators; nil otherwise).
	apiOf map[validators.PeerKey]string
	hints interface{ Hint(base string, h uint64) }
	// heightAt reads one validator's height (HTTPChain.HeightAt), for a
	// push ahead of the runner's view: behindq names the validators whose
	// API the behind worker reads.
	heightAt interface {
		HeightAt(ctx context.Context, base string) (uint64, error)
	}
	behindq chan behindReq
	// chainChecks counts the still-assigned checks the chain view answered
	// (a push below the view's height; ChainChecks).
	chainChecks atomic.Int64
}

// ChainChecks is how many §10.1 still-assigned checks went to the chain
// view (a push for a height below the runner's view), not answered by
// the push itself.
func (r *Runner) ChainChecks() int64 { return r.chainChecks.Load() }

type behindReq struct {
	base string
	h    uint64
}

// HeartbeatMargin is the runner's §6.6 safety_margin_blocks for
// HEARTBEAT_TIMEOUT_BLOCKS timeout: half of it (the effective cadence is
// the other half). The margin covers inclusion delay and congestion
// (§6.6); here that includes a validator restart or pause, during which
// the runner resubmits its heartbeat every block through another
// validator (HTTPChain over several): at ~10 blocks a second on loopback
// the 10-block margin this replaced was one second, and a 5 s restart of
// the runner's validator put runners 107 blocks past their last heartbeat
// (issue 28). Half the default 100-block timeout is 50 blocks. A timeout
// of 1 gives margin 0 (a heartbeat every block).
func HeartbeatMargin(timeout uint64) uint64 { return timeout / 2 }

// assigned is the client's §10.1 still-assigned hook. The client asks it
// only for a push that passed every other §10.1 check — the assignment
// signed by a validator of the active snapshot, assignment_height
// finalized in the runner's view — so when assignment_height is the
// newest height the runner's view knows, no later block can have
// re-selected the job or deregistered the runner, and the signed
// assignment is the current one: it answers without a request (the
// validator's own Assigned does the same for the seats of its last
// block). Otherwise the chain view is asked (HTTPChain: the validators
// that have applied that height).
func (r *Runner) assigned(ctx context.Context, job cip11.Hash, runner cip11.Address, height uint64) (bool, error) {
	if cl := r.clp.Load(); cl != nil && height >= cl.Height() {
		return true, nil
	}
	r.chainChecks.Add(1)
	return r.cfg.Chain.Assigned(ctx, job, runner, height)
}

// onPongHeight tells the chain view the height a validator's verified
// pong carried, so its requests prefer a validator that is ahead.
func (r *Runner) onPongHeight(v validators.PeerKey, h uint64) {
	if r.hints == nil {
		return
	}
	if base, ok := r.apiOf[v]; ok {
		r.hints.Hint(base, h)
	}
}

// behind is the client's hook for a push from v ahead of the runner's
// view (§10.1, SPEC-NOTES N1): the loop reads the chain height now, and
// the behind worker reads v's own API, which has applied the height v
// pushed at, so the push waits one request, not a poll interval, and not
// for the runner's preferred validator to apply that height too.
func (r *Runner) behind(v validators.PeerKey, h uint64) {
	r.nudge()
	if base, ok := r.apiOf[v]; ok && r.heightAt != nil {
		select {
		case r.behindq <- behindReq{base, h}:
		default:
		}
	}
}

// behindWorker serves behindq: it Ticks the client with the height the
// named validator reports.
func (r *Runner) behindWorker(ctx context.Context) {
	defer r.wg.Done()
	for {
		var q behindReq
		select {
		case <-ctx.Done():
			return
		case q = <-r.behindq:
		}
		if r.cl.Height() >= q.h {
			continue // the view got there meanwhile
		}
		if h, err := r.heightAt.HeightAt(ctx, q.base); err == nil {
			r.cl.Tick(h)
		}
	}
}

// nudge makes the loop read the chain height now.
func (r *Runner) nudge() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// epochPollBlocks is how often a runner reads the committed epochs: well
// inside the 8 blocks an in-band reconfiguration is announced ahead
// (SPEC-NOTES C11).
const epochPollBlocks = 3

// maxSubmitQueue bounds the transactions waiting for the submit worker.
const maxSubmitQueue = 4096

// Validate reports the first missing dependency (ErrNilConfig) or field
// out of range (ErrBadRequest).
func (c *RunnerConfig) Validate() error {
	switch {
	case c.Genesis == nil || c.Key == nil || c.Chain == nil:
		return fmt.Errorf("%w: genesis, key and chain are required", ErrNilConfig)
	case c.WorkTime < 0 || c.Tick < 0 || c.BlockTime < 0:
		return fmt.Errorf("%w: negative work time %v, tick %v or block time %v", ErrBadRequest, c.WorkTime, c.Tick, c.BlockTime)
	case c.FailPerMille > 1000:
		return fmt.Errorf("%w: fail per mille %d (0 … 1000)", ErrBadRequest, c.FailPerMille)
	case c.MaxConcurrent < 0:
		return fmt.Errorf("%w: max concurrent %d is negative", ErrBadRequest, c.MaxConcurrent)
	}
	return nil
}

func (c *RunnerConfig) defaults() {
	if c.WorkTime == 0 {
		c.WorkTime = 50 * time.Millisecond
	}
	if c.Tick == 0 {
		c.Tick = 100 * time.Millisecond
	}
	if c.BlockTime == 0 {
		c.BlockTime = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// NewRunner starts a runner: it connects to Sub(R) and runs until ctx ends
// or Close. Close waits for every goroutine it started.
func NewRunner(ctx context.Context, cfg RunnerConfig) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	g := cfg.Genesis
	p := g.P()
	phase, err := PhaseOf(p)
	if err != nil {
		return nil, err
	}
	margin := HeartbeatMargin(p.HeartbeatTimeoutBlocks)
	hb, err := local.NewHeartbeatSchedule(uint64(g.ChainID), cfg.Key.Address(), p.HeartbeatTimeoutBlocks-margin, margin, p)
	if err != nil {
		return nil, err
	}
	sets, err := NewSchedules(ScheduleConfig{Genesis: g, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	dir := &cquic.StaticDirectory{}
	if g.Network() { // every validator of every epoch: the client dials Sub(R) (§5, §5.3, D33)
		for _, e := range g.EpochSets() {
			for _, v := range e.Set {
				ua, err := net.ResolveUDPAddr("udp", v.QUIC)
				if err != nil {
					return nil, fmt.Errorf("validator address %q: %w", v.QUIC, err)
				}
				dir.Put(validators.PeerKey(v.PeerPubKey), ua)
			}
		}
	} else {
		addr := cfg.ValidatorAddr()
		ua, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return nil, fmt.Errorf("validator address %q: %w", addr, err)
		}
		dir.Put(validators.PeerKey(g.Validator.PeerPubKey), ua)
	}
	exe := cfg.Executor
	if exe == nil {
		d, err := executor.NewDemo(executor.DemoConfig{WorkTime: cfg.WorkTime, FailPerMille: cfg.FailPerMille, Seed: cfg.Seed})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		exe = d
	}
	r := &Runner{cfg: cfg, exe: exe, phase: phase, hb: hb, log: cfg.Logger, sets: sets,
		settled: map[cip11.Hash]bool{}, subq: newMailbox[[]byte](maxSubmitQueue), dir: dir, wake: make(chan struct{}, 1)}
	if g.Network() {
		r.apiOf = map[validators.PeerKey]string{}
		for _, e := range g.EpochSets() {
			for _, v := range e.Set {
				r.apiOf[validators.PeerKey(v.PeerPubKey)] = "http://" + v.HTTP
			}
		}
	}
	if hc, ok := cfg.Chain.(HTTPChain); ok && hc.pool != nil {
		r.hints = hc
	}
	r.heightAt, _ = cfg.Chain.(interface {
		HeightAt(ctx context.Context, base string) (uint64, error)
	})
	r.behindq = make(chan behindReq, 16)
	var seedNonce [8]byte
	_, _ = rand.Read(seedNonce[:])
	r.nonce.Store(binary.BigEndian.Uint64(seedNonce[:]) >> 16) // a fresh nonce space per process
	ctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	h, _ := cfg.Chain.Height(ctx)
	cl, err := cquic.NewClient(ctx, cquic.ClientConfig{
		Key: cfg.Key, ChainID: uint64(g.ChainID), Params: p, Validators: sets,
		Directory: dir, Executor: cquic.ExecutorFunc(r.execute), Specs: SpecCodec{}, Submitter: submitter{r},
		MaxConcurrent: cfg.MaxConcurrent, Listen: cfg.Listen, Offline: !phase.Transport(), PingSpread: pingSpread(cfg.PingSpread),
		Assigned:      r.assigned, // §10.1 still assigned
		OnPongHeight:  r.onPongHeight,
		Behind:        r.behind,
		ModeAReceipts: p.PresenceHardExcludeEnabled, // §8.3 receipts on 0x0101 links (SPEC-NOTES N18)
		Logger:        cfg.Logger,                   // admissions, refusals with their §12.5 reason, jobs (issue 30)
	}, h)
	if err != nil {
		cancel()
		return nil, err
	}
	r.cl = cl
	r.clp.Store(cl)
	r.wg.Add(3)
	go r.loop(ctx, h)
	go r.submitWorker(ctx)
	go r.behindWorker(ctx)
	return r, nil
}

// Address is the runner's address.
func (r *Runner) Address() cip11.Address { return r.cfg.Key.Address() }

// Client is the runner's QUIC client.
func (r *Runner) Client() *cquic.Client { return r.cl }

// Executed counts executions that produced a result.
func (r *Runner) Executed() int64 { return r.executed.Load() }

// PollAnswers counts the assignments the runner's §14 polls returned,
// whether the poll delivered them first or a push had (a duplicate).
func (r *Runner) PollAnswers() int64 { return r.polled.Load() }

// Phase is the §14 phase the runner runs (PhaseOf its genesis flags).
func (r *Runner) Phase() Phase { return r.phase }

// Close stops the runner.
func (r *Runner) Close() error {
	r.cancel()
	err := r.cl.Close()
	r.wg.Wait()
	return err
}

func (r *Runner) loop(ctx context.Context, h uint64) {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.Tick)
	defer t.Stop()
	last := h
	r.heartbeat(ctx, h)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.wake:
		}
		h, err := r.cfg.Chain.Height(ctx)
		if err != nil || h <= last {
			continue
		}
		last = h
		r.followEpochs(ctx, h)
		r.cl.Tick(h)
		r.heartbeat(ctx, h)
		r.certMu.Lock()
		r.certify(ctx, h)
		r.certMu.Unlock()
		if r.phase.Polls(r.cl.AnyUp()) {
			r.poll(ctx)
		}
	}
}

// followEpochs extends the runner's §5.4 view by the epochs in-band
// reconfigurations added (SPEC-NOTES C11), when its Chain reports them
// (EpochSource), and puts their validators in the directory, so that the
// client computes Sub_{E+1}(R) and dials it before the activation (§5.3).
func (r *Runner) followEpochs(ctx context.Context, h uint64) {
	// Only a chain with a devnet admin adds epochs in band; a genesis
	// schedule is known from the start.
	src, ok := r.cfg.Chain.(EpochSource)
	if !ok || r.cfg.Genesis.ReconfigAdmin == nil || (r.epochsAt > 0 && h < r.epochsAt+epochPollBlocks) {
		return
	}
	r.epochsAt = h
	es, err := src.Epochs(ctx)
	if err != nil {
		r.log.Debug("epochs not read", "height", h, "err", err)
		return
	}
	added, err := r.sets.Extend(es)
	if err != nil {
		r.log.Warn("a new validator-set epoch is unusable", "height", h, "err", err)
		return
	}
	for _, e := range added {
		for _, v := range e.Set {
			ua, err := net.ResolveUDPAddr("udp", v.QUIC)
			if err != nil {
				r.log.Warn("validator address of a new epoch does not resolve", "epoch", e.Epoch, "quic", v.QUIC, "err", err)
				continue
			}
			r.dir.Put(validators.PeerKey(v.PeerPubKey), ua)
		}
		r.log.Info("following a new validator-set epoch (§5.3)", "height", h, "epoch", e.Epoch, "activation_height", e.Activation, "validators", len(e.Set))
	}
}

// heartbeat keeps the runner above the §7.1 floor. The §6.6 schedule runs
// from the on-chain last_heartbeat (the block that included the runner's
// last heartbeat), never from the height a heartbeat was sent at: a
// heartbeat lost before inclusion (a validator restart empties its
// mempool) leaves last_heartbeat where it was, so the runner stays due and
// sends a new heartbeat, signed at the current height (its nonce), on
// every new block until the chain shows one included. Once h −
// last_heartbeat reaches HEARTBEAT_TIMEOUT_BLOCKS − safety_margin_blocks
// the refresh is forced whatever the phase (§6.6 emergency refresh,
// HeartbeatSchedule.NextDue). The chain is asked only when the last value
// learned says a heartbeat is due (one request a cadence, plus one a block
// while a heartbeat is outstanding); when it cannot be read that value is
// used.
//
// The runner's view can step over heights (blocks faster than its reads,
// a height learned from a pong): a bucket the view skipped is due at the
// first height seen after it — NextDue from the height after the last one
// seen, not from h. Without that a skipped bucket left the runner waiting
// for the emergency bound, logged as an emergency at every heartbeat
// (the soak of issue 31: 154 Warn lines in 800 blocks).
func (r *Runner) heartbeat(ctx context.Context, h uint64) {
	r.mu.Lock()
	cached := r.chainHB
	from := h
	if r.hbSeen > 0 && r.hbSeen < h {
		from = r.hbSeen + 1
	}
	r.hbSeen = max(r.hbSeen, h)
	r.mu.Unlock()
	if cached > 0 && r.hb.NextDue(from, cached) > h {
		return // not due even by the last value learned; the chain's can only be later
	}
	last, registered, err := r.cfg.Chain.LastHeartbeat(ctx, r.Address())
	r.mu.Lock()
	if err == nil && registered {
		r.chainHB = max(r.chainHB, last)
	}
	last = r.chainHB
	known := r.chainHB > 0
	due := r.hb.NextDue(from, last) <= h && r.lastHB != h // one attempt per block
	r.mu.Unlock()
	if err == nil && !registered {
		r.log.Debug("no heartbeat: runner not registered", "height", h)
		return
	}
	if !due {
		return
	}
	// The schedule's cadence is the emergency bound (NewRunner), so a
	// refresh at last_heartbeat + Emergency is on schedule; past it, a
	// heartbeat sent did not reach the chain in time.
	if known && h > last && h-last > r.hb.Emergency {
		r.log.Warn("emergency heartbeat refresh (§6.6): the last heartbeat sent is not on chain", "height", h, "last_heartbeat", last,
			"timeout_blocks", r.cfg.Genesis.P().HeartbeatTimeoutBlocks)
	}
	tx, err := SignTx(r.cfg.Key, uint64(r.cfg.Genesis.ChainID), TxHeartbeat, h, cip11.Hash{}, nil)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.lastHB = h
	r.mu.Unlock()
	if err := r.cfg.Chain.Submit(ctx, tx.Bytes()); err != nil {
		r.log.Debug("heartbeat not admitted", "height", h, "err", err)
	}
}

// poll asks the chain for this runner's assignments (§14) and hands each
// to the client's job path (Deliver): a job already accepted, pushed or
// polled, is not run again (§10.1), every §10.1 check applies, and the
// results are self-submitted and rebroadcast until settled (§10.3). An
// assignment not yet final in the runner's view is delivered again by a
// later poll.
func (r *Runner) poll(ctx context.Context) {
	var as []*wire.JobAssignment
	var err error
	if kc, ok := r.cfg.Chain.(KeyedChain); ok {
		as, err = kc.PollKeyed(ctx, r.Address(), r.cfg.Key.PubKey())
	} else {
		as, err = r.cfg.Chain.Poll(ctx, r.Address())
	}
	if err != nil {
		r.log.Debug("poll", "err", err)
		return
	}
	r.polled.Add(int64(len(as)))
	for _, a := range as {
		if err := r.cl.Deliver(ctx, a); err != nil && !errors.Is(err, cquic.ErrDuplicateJob) {
			r.log.Debug("polled assignment not accepted", "job", a.JobID, "err", err)
		}
	}
}

// ErrDemoFailure is the demo executor's injected failure
// (executor.ErrDemoFailure).
var ErrDemoFailure = executor.ErrDemoFailure

// execute runs an accepted job through the runner's executor and returns
// the runner-signed JobResultCommit (M > 1) and JobResultSubmit
// transactions (§10.3): result = keccak256(output), the reveal carrying the
// output (nodetx.RevealPayload, SPEC-NOTES C12). The executor's context
// ends on a §10.5 JobCancel (ctx) or at the job's estimated deadline
// (RunnerConfig.BlockTime). An executor error, or an output longer than
// MaxOutput, fails the job: nothing is sent.
func (r *Runner) execute(ctx context.Context, job *cquic.Job) (cquic.Result, error) {
	a := job.Assignment
	spec, err := DecodeJobSpec(a.JobSpec)
	if err != nil {
		return cquic.Result{}, err
	}
	r.active.Add(1)
	defer r.active.Add(-1)
	job.Progress(0, "started")
	blocks := uint64(1 << 20) // no height yet: JobCancel and the executor's own bounds end it
	if cl := r.clp.Load(); cl != nil {
		blocks = 1
		if h := cl.Height(); a.DeadlineBlock >= h {
			blocks = min(a.DeadlineBlock-h+1, 1<<20)
		}
	}
	ectx, cancel := context.WithTimeout(ctx, time.Duration(blocks)*r.cfg.BlockTime)
	defer cancel()
	in := executor.Input{JobID: a.JobID, Kind: spec.Kind, Runners: spec.Runners, Payload: spec.Payload, DeadlineBlock: a.DeadlineBlock,
		AssignmentHeight: a.AssignmentHeight, WorkMillis: spec.WorkMillis}
	output, err := r.exe.Execute(ectx, in)
	if err != nil {
		return cquic.Result{}, err
	}
	if len(output) > MaxOutput {
		return cquic.Result{}, fmt.Errorf("%w: the executor's output is %d bytes (max %d)", ErrRevealOutput, len(output), MaxOutput)
	}
	result := cip11.Keccak256(output)
	var salt cip11.Hash
	_, _ = rand.Read(salt[:])
	var res cquic.Result
	if spec.Runners > 1 {
		c, err := SignTx(r.cfg.Key, uint64(r.cfg.Genesis.ChainID), TxCommit, r.nonce.Add(1), a.JobID, func() []byte { h := Commitment(result, salt); return h[:] }())
		if err != nil {
			return res, err
		}
		res.Commit = c.Bytes()
	}
	rv, err := SignTx(r.cfg.Key, uint64(r.cfg.Genesis.ChainID), TxReveal, r.nonce.Add(1), a.JobID, RevealPayload(result, salt, output))
	if err != nil {
		return res, err
	}
	res.Reveal = rv.Bytes()
	job.Progress(100, "done")
	r.executed.Add(1)
	return res, nil
}

// submitter is the client's ResultSubmitter: rebroadcast through the
// chain's admission path (§10.3). The client calls it from Tick, so it
// never makes a request itself: Submit queues the transaction for the
// runner's submit worker, and Settled answers from what the worker last
// learned (false until it knows).
type submitter struct{ r *Runner }

func (s submitter) Submit(tx []byte) error {
	if !s.r.subq.post(tx) {
		return fmt.Errorf("%w: submit queue full", ErrClosed)
	}
	return nil
}

func (s submitter) Settled(job cip11.Hash, _ []byte) bool {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.r.settled[job]
}

// submitWorker sends queued result transactions and learns whether their
// jobs settled (§10.3 rebroadcast stops then).
func (r *Runner) submitWorker(ctx context.Context) {
	defer r.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.subq.ready:
		}
		for _, raw := range r.subq.take() {
			if err := r.cfg.Chain.Submit(ctx, raw); err != nil {
				r.log.Debug("result rebroadcast not admitted", "err", err)
			}
			tx, err := DecodeTx(raw)
			if err != nil || (tx.Kind != TxCommit && tx.Kind != TxReveal) {
				continue
			}
			ok, err := r.cfg.Chain.Settled(ctx, tx.JobID, r.Address())
			if err != nil {
				continue
			}
			r.mu.Lock()
			if ok {
				r.settled[tx.JobID] = true
			} else {
				delete(r.settled, tx.JobID)
			}
			if len(r.settled) > maxSubmitQueue { // settled jobs are forgotten by the client soon after
				clear(r.settled)
			}
			r.mu.Unlock()
		}
	}
}

// DefaultPingSpread is RunnerConfig.PingSpread's default; the client caps
// it at half the time between heights.
const DefaultPingSpread = 120 * time.Millisecond

func pingSpread(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultPingSpread
	case d < 0:
		return 0
	}
	return d
}

// Busy is the number of executions in progress (a devnet's chaos kills a
// runner that is mid-job).
func (r *Runner) Busy() int64 { return r.active.Load() }
