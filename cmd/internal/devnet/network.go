package devnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/cometbft"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
)

// NetworkConfig shapes an in-process network devnet: Validators validators
// (each with its own Pebble and CometBFT directories), Runners runners over
// QUIC dialing their Sub(R), and a job generator (cip11 devnet
// -validators N).
type NetworkConfig struct {
	Validators    int           // 4
	Runners       int           // 50
	Duration      time.Duration // job generation time (20 s)
	JobsPerBlock  int           // 2
	MultiPerMille int           // 400 (negative: none)
	TimeoutBlocks uint64        // 12
	WorkTime      time.Duration // 30 ms
	// Chaos kills one validator (f = 1) and restarts it on its directories,
	// at least Kills times (default 3), checking that it catches up.
	Chaos bool
	Kills int
	// Pause holds the last validator's consensus that long once, 3 s in
	// (cometbft.Node.Pause: its runners stay connected), and reports its catch-up
	// pushes (issue 28). Not with Chaos.
	Pause time.Duration
	// NoGossip turns presence gossip off: each proposer proposes its own
	// local presence only (the baseline of presence_coverage, §8.2).
	NoGossip bool
	// Reconfigure runs the network through two in-band reconfigurations
	// (DEVNET, §5.3–§5.4, D30, SPEC-NOTES C11): the genesis names a devnet
	// admin, and the devnet submits the admin's signed reconfiguration
	// transactions, ReconfigureSubmitLead blocks ahead, after handing the
	// new epoch's threshold shares to its members (the devnet dealer,
	// D31): a validator joins at AddAt (default 30) and the first leaves at
	// RemoveAt (default 70), with OVERLAP_BLOCKS = Overlap (default 15).
	// Not with Chaos.
	Reconfigure     bool
	AddAt, RemoveAt uint64
	Overlap         uint64
	// ModeA enables the §8.3 certificate machinery: governance sets
	// PRESENCE_HARD_EXCLUDE_ENABLED and t_hard = floor(k/2)+1 for the
	// network's k; runners collect PresenceReceipts over QUIC and submit
	// SubmitPresenceCertificate transactions. Mode A is effective only if
	// the §8.4 guard holds (k ≥ K_HARD_MIN = 20: 20 validators and Subset
	// 20); below it the certificates are shadow state.
	ModeA bool
	// Subset, if > 0, is the governance MIN_SUBSET = MAX_SUBSET (k =
	// min(validators, Subset)).
	Subset int
	// ProofTTL, if > 0, is PRESENCE_PROOF_TTL_BLOCKS (default 60).
	ProofTTL uint64
	// Uncertified runners (the first ones) never submit a certificate
	// (with ModeA): in shadow they must still be drawn, effective never.
	Uncertified int
	// TimeoutCommit is CometBFT's timeout_commit (cometbft.NetworkOptions; default 0).
	TimeoutCommit time.Duration
	// Blocks, if > 0, ends job generation at that height instead of after
	// Duration (the soak harness runs a number of blocks, not a time).
	Blocks uint64
	// SnapshotInterval, SnapshotKeep and KeepBlocks are the validators'
	// snapshot and retention settings (cometbft.NodeConfig, docs/storage.md
	// "Snapshots (node)", "Retention"); KeepBlocks applies to validators
	// Archives … Validators−1 only: the first Archives validators keep
	// every block (archive nodes, which a block-sync joiner needs to sync
	// from genesis).
	SnapshotInterval uint64
	SnapshotKeep     int
	KeepBlocks       uint64
	Archives         int
	// RPC: every home serves CometBFT's RPC (cometbft.NetworkOptions.RPC;
	// state sync's light client reads from it).
	RPC bool
	// Spares generates that many more homes (v<Validators> …) that the
	// devnet does not start: members of an in-band epoch never submitted,
	// so they run as full nodes if BeforeStop starts them (joiners).
	// Not with Reconfigure.
	Spares int
	// Sample, if set, is called on the devnet's goroutine each time the
	// network's height grows, with the new height (the run waits for it).
	Sample func(h uint64)
	// BeforeStop, if set, is called on the devnet's goroutine once the run
	// is done (the jobs drained), with the network still up; an error
	// ends the run with it. The report is taken after it returns.
	BeforeStop func(*Live) error
	// CometLogger, if set, receives the validators' CometBFT logs.
	CometLogger cometbft.CometLogger
	Dir         string // "": a temporary directory
	NoSync      bool
	Seed        uint64
	Logger      *slog.Logger
	// Progress is called about once a second.
	Progress func(NetworkProgress)
}

// Live is a running network devnet, as NetworkConfig.BeforeStop sees it.
type Live struct {
	Net   *cometbft.Network
	Homes []string // every home, the spares' included (Net.Homes' order)
	// Height is the greatest committed height of the running validators.
	Height func() uint64
}

// NetworkProgress is a progress snapshot of the network devnet.
type NetworkProgress struct {
	Elapsed              time.Duration
	Height               uint64
	Submitted, Completed int64
	Draining             bool
}

func (c *NetworkConfig) defaults() error {
	switch {
	case c.Validators < 0 || c.Validators > MaxValidators:
		return fmt.Errorf("%w: devnet: validators %d (1 … %d)", node.ErrBadRequest, c.Validators, MaxValidators)
	case c.Uncertified < 0 || c.Uncertified > c.Runners || (c.Uncertified > 0 && !c.ModeA):
		return fmt.Errorf("%w: devnet: uncertified %d needs ModeA and at most the %d runners", node.ErrBadRequest, c.Uncertified, c.Runners)
	case c.Subset < 0 || c.Subset > 64:
		return fmt.Errorf("%w: devnet: subset %d (1 … 64)", node.ErrBadRequest, c.Subset)
	case c.Runners < 0 || c.Runners > 10_000:
		return fmt.Errorf("%w: devnet: runners %d (1 … 10000)", node.ErrBadRequest, c.Runners)
	case c.Duration < 0 || c.JobsPerBlock < 0 || c.WorkTime < 0 || c.Kills < 0 || c.MultiPerMille > 1000:
		return fmt.Errorf("%w: devnet: a negative duration, jobs per block, work time or kills, or multi per mille > 1000", node.ErrBadRequest)
	case c.Chaos && c.Reconfigure:
		return fmt.Errorf("%w: devnet: -chaos and -reconfigure do not combine", node.ErrBadRequest)
	case c.Pause < 0 || c.Pause > 0 && (c.Chaos || c.Reconfigure):
		return fmt.Errorf("%w: devnet: -pause %v (positive; not with -chaos or -reconfigure)", node.ErrBadRequest, c.Pause)
	case c.Spares < 0 || c.Spares > 0 && c.Reconfigure || c.Archives < 0:
		return fmt.Errorf("%w: devnet: spares %d, archives %d (not negative; no spares with -reconfigure)", node.ErrBadRequest, c.Spares, c.Archives)
	case c.Chaos && c.Validators != 0 && c.Validators < 4:
		return fmt.Errorf("%w: devnet: -chaos kills one validator and needs 4 or more (f = 1)", node.ErrBadRequest)
	}
	if c.Validators == 0 {
		c.Validators = 4
	}
	c.load().defaults()
	if c.Kills == 0 {
		c.Kills = 3
	}
	if c.Reconfigure {
		if c.AddAt == 0 {
			c.AddAt = 30
		}
		if c.RemoveAt == 0 {
			c.RemoveAt = 70
		}
		if c.Overlap == 0 {
			c.Overlap = 15
		}
		if c.AddAt < ReconfigureSubmitLead+3 || c.RemoveAt < c.AddAt+max(c.Overlap, ReconfigureSubmitLead) {
			return fmt.Errorf("%w: devnet: reconfigurations at %d and %d (the first ≥ %d; the second ≥ the first + max(overlap %d, %d))",
				node.ErrBadRequest, c.AddAt, c.RemoveAt, ReconfigureSubmitLead+3, c.Overlap, ReconfigureSubmitLead)
		}
	}
	return nil
}

func (c *NetworkConfig) load() load {
	return load{runners: &c.Runners, duration: &c.Duration, perBlock: &c.JobsPerBlock, multiPerMille: &c.MultiPerMille,
		timeout: &c.TimeoutBlocks, work: &c.WorkTime, logger: &c.Logger}
}

// ReconfigureSubmitLead is how many blocks before an activation the
// devnet submits the admin's reconfiguration: blockexec.ReconfigureLeadBlocks
// and 4 blocks for its inclusion.
const ReconfigureSubmitLead = blockexec.ReconfigureLeadBlocks + 4

// netDevnet is a running network devnet.
type netDevnet struct {
	nw *cometbft.Network
	// -reconfigure: the in-band epochs submitted so far
	submitted int
	cfg       NetworkConfig
	homes     []string
	mu        sync.Mutex // nodes, the records below
	nodes     []*cometbft.Node
	// heights, indexed by height: the first time any validator finalized
	// each, and the validators' digests folded as they arrive (issue 31's
	// soak measures the heap: per-height maps cost ~0.5 KB a block, these
	// ~50 B)
	heights []heightRecord
	// disagree is set when a validator's digest differs from the first one
	// recorded at its height
	disagree bool
	// transport counts of stopped validator instances
	pushed, dup, notHeld int64
	ackLat               job.Histogram
	sentLat              job.Histogram
	gossipBytes          uint64
	skipped              map[string]uint64
	// finalized is the greatest height any validator finalized; stale and
	// pausedAfter count pushes (notePushes)
	finalized, stale, pausedAfter atomic.Int64
	pausedUntil                   atomic.Int64 // unix ns: the victim's pause end
	coverage                      []float64    // per block with a connected runner
	// connAt is the number of runners connected to any validator when
	// validator 0 committed each height sampleCoverage saw: the denominator
	// of the next block's coverage.
	connAt     map[uint64]int
	covH       uint64 // the last height sampleCoverage saw (the run loop's)
	g          *node.Genesis
	runnerKeys []*wire.RunnerKey
	// -reconfigure: the removed validator's admissions at its cutoff (−1:
	// not reached yet)
	admittedAtCutoff int64
	// and per runner and epoch the first and last height a link under
	// that epoch's pair was seen up
	linkSeen []map[uint64][2]uint64
}

// heightRecord is what the devnet keeps of one height: when a validator
// first finalized it (unix ns), that validator's digest, and the set of
// validators (bit i: validator i) that reported it.
type heightRecord struct {
	first  int64
	digest cip11.Hash
	seen   uint64
}

func (n *netDevnet) hook(i int) func(uint64, cip11.Hash) {
	return func(h uint64, d cip11.Hash) {
		for x := n.finalized.Load(); int64(h) > x && !n.finalized.CompareAndSwap(x, int64(h)); x = n.finalized.Load() {
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		for uint64(len(n.heights)) <= h {
			n.heights = append(n.heights, heightRecord{})
		}
		r := &n.heights[h]
		switch {
		case r.seen == 0:
			r.first, r.digest = time.Now().UnixNano(), d
		case r.digest != d:
			n.disagree = true
		}
		if i < 64 {
			r.seen |= 1 << i
		}
	}
}

func (n *netDevnet) start(ctx context.Context, i int) error {
	var nd *cometbft.Node
	var err error
	for range 50 { // a restarted validator's ports may take a moment to free
		c := cometbft.NodeConfig{Home: n.homes[i], NoSync: n.cfg.NoSync, Logger: n.cfg.Logger, OnFinalized: n.hook(i),
			NoGossip: n.cfg.NoGossip, CometLogger: n.cfg.CometLogger, OnPushes: n.notePushes(i),
			SnapshotInterval: n.cfg.SnapshotInterval, SnapshotKeep: n.cfg.SnapshotKeep}
		if i >= n.cfg.Archives {
			c.KeepBlocks = n.cfg.KeepBlocks
		}
		if nd, err = cometbft.StartNode(ctx, c); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("validator %d: %w", i, err)
	}
	n.mu.Lock()
	n.nodes[i] = nd
	n.mu.Unlock()
	return nil
}

// notePushes counts validator i's pushes handed to its transport whose
// deadline had passed at the network's head, and the paused validator's
// after its pause (on i's loop: atomics only).
func (n *netDevnet) notePushes(i int) func(uint64, []chain.Assignment) {
	return func(h uint64, ps []chain.Assignment) {
		head := uint64(max(n.finalized.Load(), 0))
		for _, a := range ps {
			if a.DeadlineBlock <= head {
				n.stale.Add(1)
				n.cfg.Logger.Warn("devnet: a push for the past", "validator", i, "height", h, "head", head, "job", a.JobID, "deadline", a.DeadlineBlock)
			}
		}
		if u := n.pausedUntil.Load(); u != 0 && i == len(n.nodes)-1 && time.Now().UnixNano() > u {
			n.pausedAfter.Add(int64(len(ps)))
		}
	}
}

// stopAll stops every running validator, in parallel (each Close waits for
// CometBFT's stores, node.go).
func (n *netDevnet) stopAll() {
	var wg sync.WaitGroup
	for i := range n.nodes {
		wg.Go(func() { _ = n.stop(i) })
	}
	wg.Wait()
}

// stop stops validator i, keeping its transport counts.
func (n *netDevnet) stop(i int) error {
	n.mu.Lock()
	nd := n.nodes[i]
	n.nodes[i] = nil
	n.mu.Unlock()
	if nd == nil {
		return nil
	}
	defer n.evict(nd.ID())
	s := nd.V.Stats()
	n.mu.Lock()
	n.pushed += s.Pushed
	n.dup += int64(nd.V.DuplicateAcks())
	n.notHeld += int64(nd.V.NotHeld())
	n.ackLat.Merge(&s.AckMicros)
	n.sentLat.Merge(&s.SentMicros)
	n.gossipBytes += nd.Gossip().BytesSent
	n.addSkipped(nd)
	n.mu.Unlock()
	return nd.Close()
}

// addSkipped adds nd's skipped pushes (n.mu held).
func (n *netDevnet) addSkipped(nd *cometbft.Node) {
	if n.skipped == nil {
		n.skipped = map[string]uint64{}
	}
	for r, c := range nd.V.PushesSkipped() {
		n.skipped[r] += c
	}
}

// evict has every running validator drop its connection under id, after
// that validator stopped (cometbft.Node.DropPeer).
func (n *netDevnet) evict(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, nd := range n.nodes {
		if nd != nil {
			nd.DropPeer(id)
		}
	}
}

// live is a running validator, preferring i.
func (n *netDevnet) live(i int) (*node.Validator, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for j := range n.nodes {
		if nd := n.nodes[(i+j)%len(n.nodes)]; nd != nil {
			return nd.V, nil
		}
	}
	return nil, node.ErrClosed
}

// follow is runner i's chain view (node.LocalChain (with Pick)): the running
// validator furthest ahead, preferring validator i among equals, as a
// runner's chain view follows the finalized tip; a killed validator's
// runners move on (D33).
func (n *netDevnet) follow(i int) func() (*node.Validator, error) {
	return func() (*node.Validator, error) { return n.ahead(i) }
}

// ahead is the running validator with the greatest committed height,
// preferring i among equals.
func (n *netDevnet) ahead(i int) (*node.Validator, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var best *node.Validator
	for j := range n.nodes {
		if nd := n.nodes[(i+j)%len(n.nodes)]; nd != nil && (best == nil || nd.V.Height() > best.Height()) {
			best = nd.V
		}
	}
	if best == nil {
		return nil, node.ErrClosed
	}
	return best, nil
}

// height is the greatest committed height of the running validators.
func (n *netDevnet) height() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var h uint64
	for _, nd := range n.nodes {
		if nd != nil {
			h = max(h, nd.V.Height())
		}
	}
	return h
}

// MaxValidators bounds NetworkConfig.Validators: enough for the
// effective Mode-A run (k ≥ K_HARD_MIN = 20, §8.4) in one process.
const MaxValidators = 24

// RunNetwork runs a network devnet until cfg.Duration has passed and every
// job has ended (or the drain bound ran out), and reports.
func RunNetwork(ctx context.Context, cfg NetworkConfig) (*NetworkReport, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "cip11-net-")
		if err != nil {
			return nil, err
		}
		dir = d
		defer os.RemoveAll(d)
	}
	o := cometbft.NetworkOptions{Validators: cfg.Validators, Runners: cfg.Runners, Seed: cfg.Seed, TimeoutCommit: cfg.TimeoutCommit, RPC: cfg.RPC}
	p := node.DefaultGenesisParams()
	if cfg.Spares > 0 { // pool members of an epoch the devnet never submits (InBand)
		o.Members = cfg.Validators + cfg.Spares
		o.Epochs = []cometbft.EpochPlan{{Activation: 1 << 40, Members: seqTo(o.Members)}}
		o.InBand = true
	}
	if cfg.Reconfigure { // one more in the pool: joins at AddAt; member 0 leaves at RemoveAt
		p.OverlapBlocks = cfg.Overlap
		o.Params = &p
		o.Members, o.Epochs = cometbft.AddThenRemove(cfg.Validators, cfg.AddAt, cfg.RemoveAt)
		o.InBand = true
	}
	if cfg.ModeA || cfg.Subset > 0 || cfg.ProofTTL > 0 { // governance parameters (§8.3, §8.4, §13)
		if cfg.Subset > 0 {
			p.MinSubset, p.MaxSubset = uint32(cfg.Subset), uint32(cfg.Subset)
		}
		if cfg.ProofTTL > 0 {
			p.PresenceProofTTLBlocks = cfg.ProofTTL
		}
		if cfg.ModeA {
			p.PresenceHardExcludeEnabled = true
			p.THard = uint32(p.SubsetSize(cfg.Validators)/2 + 1)
		}
		o.Params = &p
	}
	o.BasePort = cometbft.FreeBasePort(max(o.Members, o.Validators))
	nw, err := cometbft.NewNetwork(o)
	if err != nil {
		return nil, err
	}
	if err := nw.Write(dir); err != nil {
		return nil, err
	}
	members := len(nw.Homes) - cfg.Spares
	n := &netDevnet{nw: nw, cfg: cfg, nodes: make([]*cometbft.Node, members), g: nw.Homes[0].Genesis}
	for i := range nw.Homes {
		n.homes = append(n.homes, filepath.Join(dir, fmt.Sprintf("v%d", i)))
	}
	defer n.stopAll()
	for i := range members { // a validator that joins later runs as a full node until then
		if err := n.start(ctx, i); err != nil {
			return nil, err
		}
	}
	g := nw.Homes[0].Genesis
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runners := make([]*node.Runner, cfg.Runners)
	n.runnerKeys = make([]*wire.RunnerKey, cfg.Runners)
	defer func() {
		for _, r := range runners {
			if r != nil {
				r.Close()
			}
		}
	}()
	for i := range cfg.Runners {
		k, err := wire.NewRunnerKey(devkeys.Runner(cfg.Seed, i))
		if err != nil {
			return nil, err
		}
		n.runnerKeys[i] = k
		if runners[i], err = node.NewRunner(rctx, node.RunnerConfig{Genesis: g, Key: k, Chain: node.LocalChain{Pick: n.follow(i % cfg.Validators)},
			WorkTime: cfg.WorkTime, Tick: 10 * time.Millisecond, Logger: runnerLogger(cfg.Logger), Seed: cfg.Seed*1000 + uint64(i), NoCertificates: i < cfg.Uncertified}); err != nil {
			return nil, err
		}
	}
	return n.run(ctx, runners)
}

func (n *netDevnet) run(ctx context.Context, runners []*node.Runner) (*NetworkReport, error) {
	cfg := n.cfg
	rep := &NetworkReport{Validators: cfg.Validators, Runners: cfg.Runners, GoMaxProcs: runtime.GOMAXPROCS(0)}
	n.admittedAtCutoff = -1
	reconfigDone := uint64(0) // -reconfigure: run on past the last cutoff
	if cfg.Reconfigure {
		reconfigDone = cfg.RemoveAt + cfg.Overlap + 10
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xde7))
	gen := cfg.load().generator(rng)
	start := time.Now()
	last := uint64(0)
	drainUntil := uint64(0)
	victim, downAt, downUntil := cfg.Validators-1, uint64(0), time.Time{}
	nextKill := start.Add(3 * time.Second)
	var catchUp []uint64 // heights the restarted validator had to reach
	var catchFrom []int  // and its restart count index
	catching, restartedAt := false, time.Time{}
	var pauseEnd time.Time // -pause: when the victim's pause ends
	resumed := false
	lastProgress, lastAdvance := start, start
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			v, err := n.live(0)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
			}
			_, open := v.JobStates()
			rep.Interrupted, rep.Open = true, len(open)
			r, err := n.report(rep, v, 0, catchUp, time.Since(start))
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
			}
			// the chain's height so far, as the progress line showed it:
			// validator 0 may not have applied the newest block yet
			r.Blocks = max(r.Blocks, n.height())
			return r, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case <-tick.C:
		}
		now := time.Now()
		h := n.height()
		draining := now.Sub(start) >= cfg.Duration
		if cfg.Blocks > 0 {
			draining = h >= cfg.Blocks
		}
		if h > last && !draining && h >= 3 {
			for _, spec := range gen.block() {
				v, err := n.live(int(spec.Nonce) % cfg.Validators)
				if err != nil {
					return nil, err
				}
				if _, err := v.SubmitJob(spec); err != nil && !errors.Is(err, node.ErrDuplicate) {
					return nil, fmt.Errorf("submit: %w", err)
				}
			}
		}
		if h > last {
			lastAdvance = now
			if cfg.Sample != nil {
				cfg.Sample(h)
			}
		}
		if err := n.failure(); err != nil {
			return nil, err
		}
		if now.Sub(lastAdvance) > stallAfter {
			return nil, fmt.Errorf("%w: the chain made no block for %v (height %d)", ErrStalled, stallAfter, h)
		}
		n.sampleCoverage() // every tick: each of validator 0's heights once
		if cfg.Reconfigure && h > last {
			n.sampleLinks(runners, h)
			if err := n.reconfigure(h); err != nil {
				return nil, err
			}
		}
		if cfg.Reconfigure && n.admittedAtCutoff < 0 && h >= cfg.RemoveAt+cfg.Overlap {
			n.admittedAtCutoff = n.admitted(0)
			cfg.Logger.Info("devnet: the removed validator's overlap window ended", "height", h, "admitted", n.admittedAtCutoff)
		}
		last = max(last, h)
		// chaos: kill the victim (f = 1), restart it on its directories
		if catching && n.levelled(victim) { // the restarted validator caught up
			catching = false
			d := now.Sub(restartedAt)
			rep.CatchUpMaxSeconds = max(rep.CatchUpMaxSeconds, float64(d.Milliseconds())/1000)
			cfg.Logger.Info("devnet: restarted validator caught up", "validator", victim, "after", d, "height", h)
			nextKill = now.Add(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
		}
		if catching && now.Sub(restartedAt) > catchUpLimit {
			return nil, fmt.Errorf("%w: validator %d restarted %v ago and is not level with the others", ErrStalled, victim, catchUpLimit)
		}
		if cfg.Chaos && (!draining || rep.ValidatorKills < cfg.Kills) && downUntil.IsZero() && !catching && now.After(nextKill) {
			if err := n.stop(victim); err != nil {
				return nil, fmt.Errorf("killing validator %d: %w", victim, err)
			}
			rep.ValidatorKills++
			// down from after the stop (Close waits for CometBFT's stores)
			downAt, downUntil = h, time.Now().Add(time.Duration(1500+rng.IntN(1000))*time.Millisecond)
			cfg.Logger.Info("devnet: validator stopped", "validator", victim, "height", h)
		}
		if cfg.Pause > 0 && pauseEnd.IsZero() && now.Sub(start) >= 3*time.Second {
			n.mu.Lock()
			nd := n.nodes[victim]
			n.mu.Unlock()
			nd.Pause(cfg.Pause)
			pauseEnd = now.Add(cfg.Pause)
			n.pausedUntil.Store(pauseEnd.UnixNano())
			cfg.Logger.Info("devnet: validator paused", "validator", victim, "height", h, "for", cfg.Pause)
		}
		if !pauseEnd.IsZero() && !resumed && now.After(pauseEnd) {
			resumed = true
			n.mu.Lock()
			vh := n.nodes[victim].V.Height()
			n.mu.Unlock()
			rep.PausedBehind = h - min(h, vh)
			cfg.Logger.Info("devnet: validator resumed", "validator", victim, "height", vh, "head", h)
		}
		if !downUntil.IsZero() && now.After(downUntil) {
			if err := n.start(ctx, victim); err != nil {
				return nil, err
			}
			catchUp, catchFrom = append(catchUp, n.height()), append(catchFrom, rep.ValidatorKills)
			cfg.Logger.Info("devnet: validator restarted", "validator", victim, "down_at", downAt, "height", n.height())
			downUntil = time.Time{}
			catching, restartedAt = true, time.Now()
		}
		if cfg.Progress != nil && now.Sub(lastProgress) >= time.Second {
			lastProgress = now
			if v, err := n.live(0); err == nil {
				s := v.Stats()
				cfg.Progress(NetworkProgress{Elapsed: now.Sub(start), Height: h, Submitted: s.Submitted, Completed: s.Completed, Draining: draining})
			}
		}
		if draining && downUntil.IsZero() && !catching && (cfg.Pause == 0 || resumed) && (!cfg.Chaos || rep.ValidatorKills >= cfg.Kills) && h >= reconfigDone {
			if drainUntil == 0 {
				drainUntil = h + 4*(cfg.TimeoutBlocks+1) + 20
			}
			v, err := n.live(0)
			if err != nil {
				return nil, err
			}
			_, open := v.JobStates()
			if len(open) == 0 || h >= drainUntil {
				if cfg.Chaos || cfg.Pause > 0 { // the last restart (the pause) catches up before the report
					n.waitLevel(cfg.Validators-1, 30*time.Second)
				}
				var total int64
				for _, r := range runners {
					x := r.Executed()
					total += x
					rep.JobsPerRunnerMax = max(rep.JobsPerRunnerMax, x)
				}
				if len(runners) > 0 {
					rep.JobsPerRunnerAvg = float64(total*100/int64(len(runners))) / 100
				}
				if cfg.ModeA {
					p := n.g.P()
					k := p.SubsetSize(cfg.Validators)
					ma, err := modeAReport(n.blockLog(0), p, k, p.ModeAEffective(uint32(k)), cfg.Runners)
					if err != nil {
						return nil, fmt.Errorf("mode A report: %w", err)
					}
					for _, r := range runners {
						ma.RunnerCertificates += r.CertificatesSent()
						st := r.Client().Stats()
						ma.ReceiptsReceived += st.ReceiptsOK
						ma.ReceiptsBad += st.ReceiptsRejected
					}
					rep.ModeA = ma
				}
				if cfg.Reconfigure {
					n.reportGoodbyes(rep, runners)
					if err := n.reportReconfig(rep, h); err != nil {
						return nil, err
					}
				}
				rep.ServeMicros, rep.RunnerChainChecks = runnerParts(runners)
				elapsed := time.Since(start)
				if cfg.BeforeStop != nil {
					if err := cfg.BeforeStop(&Live{Net: n.nw, Homes: n.homes, Height: n.height}); err != nil {
						return nil, err
					}
				}
				return n.report(rep, v, len(open), catchUp, elapsed)
			}
		}
	}
}

// ErrStalled: the devnet's chain stopped making blocks.
var ErrStalled = errors.New("devnet: chain stalled")

// ErrInterrupted: the devnet's context ended (SIGINT) before the run did.
// Run and RunNetwork then return the report so far with it (wrapping the
// context's error) when a validator was up to read it from.
var ErrInterrupted = errors.New("devnet: interrupted")

// failure is the first running validator's fatal failure, naming the
// validator (cometbft.FirstFailure): the devnet reports it and ends.
func (n *netDevnet) failure() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return cometbft.FirstFailure(n.nodes)
}

// stallAfter bounds a devnet's wait for the next block.
const stallAfter = 60 * time.Second

// catchUpLimit bounds a restarted validator's catch-up.
const catchUpLimit = 60 * time.Second

// levelled reports whether validator i runs and is level with the greatest
// height of the others.
func (n *netDevnet) levelled(i int) bool {
	n.mu.Lock()
	nd := n.nodes[i]
	n.mu.Unlock()
	return nd != nil && nd.V.Height() >= n.height()
}

// waitLevel waits (at most within) until validator i is level with the
// greatest height of the others.
func (n *netDevnet) waitLevel(i int, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		n.mu.Lock()
		nd := n.nodes[i]
		n.mu.Unlock()
		if nd != nil && nd.V.Height() >= n.height() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seqTo is 0 … n−1.
func seqTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
