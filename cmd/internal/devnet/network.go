package devnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/replay"
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
	// CometLogger, if set, receives the validators' CometBFT logs.
	CometLogger cometbft.CometLogger
	Dir         string // "": a temporary directory
	NoSync      bool
	Seed        uint64
	Logger      *slog.Logger
	// Progress is called about once a second.
	Progress func(NetworkProgress)
}

// OverlapTimeline is one epoch change seen from the runners (§5.3): the
// activation height and cutoff (activation + OVERLAP_BLOCKS); over the
// runners that held a link under the new pair, the earliest and latest
// height one first did; and the last height any runner held a link under
// the old pair (0: none did).
type OverlapTimeline struct {
	Epoch          uint64 `json:"epoch"`
	Activation     uint64 `json:"activation_height"`
	Cutoff         uint64 `json:"cutoff_height"`
	Runners        int    `json:"runners_with_new_pair"`
	NewPairFirstUp uint64 `json:"new_pair_first_up_min"`
	NewPairLastUp  uint64 `json:"new_pair_first_up_max"`
	OldPairLastUp  uint64 `json:"old_pair_last_up"`
}

// NetworkProgress is a progress snapshot of the network devnet.
type NetworkProgress struct {
	Elapsed              time.Duration
	Height               uint64
	Submitted, Completed int64
	Draining             bool
}

// NetworkReport is the network devnet's summary (-json).
type NetworkReport struct {
	Validators      int     `json:"validators"`
	Runners         int     `json:"runners"`
	Blocks          uint64  `json:"blocks"`
	Submitted       int64   `json:"jobs_submitted"`
	Completed       int64   `json:"jobs_completed"`
	Expired         int64   `json:"jobs_expired"`
	Lost            int     `json:"jobs_lost"`
	Assignments     int64   `json:"assignments"`
	Seats           int64   `json:"committee_seats"`
	Pushes          int64   `json:"pushes"`
	PushesPerAssign float64 `json:"pushes_per_seat"`
	DuplicateAcks   int64   `json:"duplicate_acks"`
	NotHeld         int64   `json:"not_held"`
	PushP50Millis   float64 `json:"push_latency_p50_ms"`
	PushP99Millis   float64 `json:"push_latency_p99_ms"`
	// PushMicros is the push-latency histogram behind the two figures
	// above (harnesses pool it across runs).
	PushMicros     job.Histogram `json:"-"`
	SentP50Millis  float64       `json:"push_sent_p50_ms"`
	SentP99Millis  float64       `json:"push_sent_p99_ms"`
	BlockP50Millis float64       `json:"block_interval_p50_ms"`
	BlockP99Millis float64       `json:"block_interval_p99_ms"`
	AppHashesAgree bool          `json:"app_hashes_agree"`
	Gossip         bool          `json:"presence_gossip"`
	// PresenceCoverage: |PresenceInput(h)| / the runners connected to at
	// least one validator when h−1 committed (when the proposer built
	// PresenceInput(h)), over the blocks from 4 on with any then, capped at
	// 1 (a runner may connect between the commit and the proposal): median,
	// minimum, and the share of blocks at 1.
	CoverageP50      float64 `json:"presence_coverage_p50"`
	CoverageMin      float64 `json:"presence_coverage_min"`
	CoverageFullPct  float64 `json:"presence_coverage_full_pct"`
	CoverageBlocks   int     `json:"presence_coverage_blocks"`
	JobsPerRunnerMax int64   `json:"jobs_per_runner_max"`
	JobsPerRunnerAvg float64 `json:"jobs_per_runner_mean"`
	GossipBytes      uint64  `json:"gossip_bytes_sent"`
	HeightsCompared  uint64  `json:"heights_compared"`
	// Reconfiguration (-reconfigure): the epochs the chain went through,
	// the runners connected at the end only to validators of their final
	// Sub(R) (re-homed) and those still connected elsewhere, and the
	// connections the removed validator admitted after its cutoff.
	Epochs               int   `json:"epochs,omitempty"`
	RunnersRehomed       int   `json:"runners_rehomed,omitempty"`
	RunnersStray         int   `json:"runners_connected_outside_subset,omitempty"`
	RemovedAdmittedAfter int64 `json:"removed_validator_admissions_after_cutoff,omitempty"`
	// Goodbyes sent by the validators and by the runners, by §12.5 reason.
	GoodbyesByValidators map[string]int64 `json:"goodbyes_sent_by_validators,omitempty"`
	GoodbyesByRunners    map[string]int64 `json:"goodbyes_sent_by_runners,omitempty"`
	// Overlap is the per-transition timeline over the runners (sampled
	// every height): when each runner first held a link under the new
	// epoch's pair, and the last height any runner held one under the old
	// epoch's pair (§5.3: before the cutoff).
	Overlap           []OverlapTimeline `json:"overlap_timeline,omitempty"`
	ValidatorKills    int               `json:"validator_kills"`
	CaughtUp          bool              `json:"restarted_caught_up"`
	CatchUpMaxSeconds float64           `json:"catch_up_max_s"`
	ReplayAgrees      bool              `json:"replay_agrees"`
	// StalePushes are the pushes any validator handed to its transport
	// whose deadline_block was at or below the network's greatest
	// finalized height then (issue 28: a catching-up validator pushes
	// nothing for the past). PushesSkipped are the pushes the validators
	// skipped while catching up, by reason (node.SkipReasons).
	StalePushes   int64             `json:"stale_pushes"`
	PushesSkipped map[string]uint64 `json:"pushes_skipped,omitempty"`
	// -pause: the paused validator's pushes handed over after the pause
	// (at the head), and the heights it was behind when it resumed.
	PausedPushesAfter int64  `json:"paused_pushes_after"`
	PausedBehind      uint64 `json:"paused_behind_blocks"`
	// ModeA is the §8.3 report (-mode-a).
	ModeA *ModeAReport `json:"mode_a,omitempty"`
	// GoMaxProcs is the Go runtime's GOMAXPROCS during the run (every
	// validator, CometBFT node and runner shares this one process).
	GoMaxProcs int     `json:"gomaxprocs"`
	Dir        string  `json:"dir,omitempty"`
	Elapsed    float64 `json:"elapsed_s"`
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
	case c.Chaos && c.Validators != 0 && c.Validators < 4:
		return fmt.Errorf("%w: devnet: -chaos kills one validator and needs 4 or more (f = 1)", node.ErrBadRequest)
	}
	if c.Validators == 0 {
		c.Validators = 4
	}
	if c.Runners == 0 {
		c.Runners = 50
	}
	if c.Duration == 0 {
		c.Duration = 20 * time.Second
	}
	if c.JobsPerBlock == 0 {
		c.JobsPerBlock = 2
	}
	if c.MultiPerMille == 0 {
		c.MultiPerMille = 400
	}
	if c.MultiPerMille < 0 {
		c.MultiPerMille = 0
	}
	if c.TimeoutBlocks == 0 {
		c.TimeoutBlocks = 12
	}
	if c.WorkTime == 0 {
		c.WorkTime = 30 * time.Millisecond
	}
	if c.Kills == 0 {
		c.Kills = 3
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
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
	// per height: the first time any validator finalized it, and every
	// validator's digest
	first   map[uint64]time.Time
	digests map[uint64]map[int]cip11.Hash
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

func (n *netDevnet) hook(i int) func(uint64, cip11.Hash) {
	return func(h uint64, d cip11.Hash) {
		for x := n.finalized.Load(); int64(h) > x && !n.finalized.CompareAndSwap(x, int64(h)); x = n.finalized.Load() {
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if _, ok := n.first[h]; !ok {
			n.first[h] = time.Now()
		}
		if n.digests[h] == nil {
			n.digests[h] = map[int]cip11.Hash{}
		}
		n.digests[h][i] = d
	}
}

func (n *netDevnet) start(ctx context.Context, i int) error {
	var nd *cometbft.Node
	var err error
	for range 50 { // a restarted validator's ports may take a moment to free
		if nd, err = cometbft.StartNode(ctx, cometbft.NodeConfig{Home: n.homes[i], NoSync: n.cfg.NoSync, Logger: n.cfg.Logger, OnFinalized: n.hook(i),
			NoGossip: n.cfg.NoGossip, CometLogger: n.cfg.CometLogger, OnPushes: n.notePushes(i)}); err == nil {
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

// follow is runner i's chain view (node.FollowChain): the running
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

// MaxValidators bounds DevnetConfig.Validators: enough for the
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
	o := cometbft.NetworkOptions{Validators: cfg.Validators, Runners: cfg.Runners, Seed: cfg.Seed, TimeoutCommit: cfg.TimeoutCommit}
	p := node.DefaultGenesisParams()
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
	members := len(nw.Homes)
	n := &netDevnet{nw: nw, cfg: cfg, nodes: make([]*cometbft.Node, members), first: map[uint64]time.Time{}, digests: map[uint64]map[int]cip11.Hash{}, g: nw.Homes[0].Genesis}
	for i := range members {
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
		if runners[i], err = node.NewRunner(rctx, node.RunnerConfig{Genesis: g, Key: k, Chain: node.FollowChain{Pick: n.follow(i % cfg.Validators)},
			WorkTime: cfg.WorkTime, Tick: 10 * time.Millisecond, Logger: cfg.Logger, Seed: cfg.Seed*1000 + uint64(i), NoCertificates: i < cfg.Uncertified}); err != nil {
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
	gen := jobGen{rng: rng, perBlock: cfg.JobsPerBlock, multiPerMille: cfg.MultiPerMille, timeout: cfg.TimeoutBlocks, work: cfg.WorkTime}
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
			return nil, ctx.Err()
		case <-tick.C:
		}
		now := time.Now()
		h := n.height()
		draining := now.Sub(start) >= cfg.Duration
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
				return n.report(rep, v, len(open), catchUp, time.Since(start))
			}
		}
	}
}

// admitted is validator i's cumulative QUIC admissions (−1: not running).
func (n *netDevnet) admitted(i int) int64 {
	n.mu.Lock()
	nd := n.nodes[i]
	n.mu.Unlock()
	if nd == nil {
		return -1
	}
	st, ok := nd.V.TransportStats()
	if !ok {
		return -1
	}
	return st.Admitted
}

// reconfigure is the devnet admin (-reconfigure, SPEC-NOTES C11): at
// ReconfigureSubmitLead blocks before a planned activation it hands the
// epoch's threshold shares to its members (the devnet dealer, D31) and
// submits the admin's signed reconfiguration to a running validator,
// which gossips it to every proposer.
func (n *netDevnet) reconfigure(h uint64) error {
	acts := []uint64{n.cfg.AddAt, n.cfg.RemoveAt}
	if n.submitted >= len(acts) || h+ReconfigureSubmitLead < acts[n.submitted] {
		return nil
	}
	e := n.submitted + 1
	tx, shares, err := n.nw.Dealer.Reconfiguration(e, acts[n.submitted])
	if err != nil {
		return err
	}
	n.mu.Lock()
	for pos, sec := range shares {
		nd := n.nodes[pos]
		if nd == nil {
			continue
		}
		if err := nd.AddEpochShare(uint64(e), sec); err != nil {
			n.mu.Unlock()
			return fmt.Errorf("devnet dealer: epoch %d share of validator %d: %w", e, pos, err)
		}
	}
	n.mu.Unlock()
	v, err := n.live(0)
	if err != nil {
		return err
	}
	if _, err := v.SubmitTx(tx); err != nil {
		return fmt.Errorf("devnet admin: reconfiguration to epoch %d: %w", e, err)
	}
	n.submitted++
	n.cfg.Logger.Info("devnet admin: reconfiguration submitted", "height", h, "epoch", e, "activation_height", acts[e-1])
	return nil
}

// epochs are the validator-set epochs the chain committed (validator 0's
// view; the genesis's if it is not running).
func (n *netDevnet) epochs() []node.EpochSet {
	if v, err := n.live(0); err == nil {
		return v.Epochs()
	}
	return n.g.EpochSets()
}

// reportReconfig fills the -reconfigure counts at height h: the epochs, the
// runners held only by validators of their Sub(R) in the epoch active at h
// (re-homed) or by another (stray), and the removed validator's admissions
// after its cutoff (§5.3 point 4: it must receive no new connections).
func (n *netDevnet) reportReconfig(rep *NetworkReport, h uint64) error {
	es := n.epochs()
	hist, err := node.HistoryOf(es)
	if err != nil {
		return err
	}
	snap, err := hist.Active(h)
	if err != nil {
		return err
	}
	rep.Epochs = len(es)
	rep.Overlap = n.overlapTimelines(n.cfg.Overlap)
	held := map[cip11.Address][]int{}
	n.mu.Lock()
	for i, nd := range n.nodes {
		if nd != nil {
			for _, a := range nd.V.ConnectedRunners() {
				held[a] = append(held[a], i)
			}
		}
	}
	homes := n.peerKeys()
	n.mu.Unlock()
	p := n.g.P()
	for _, k := range n.runnerKeys {
		hs := held[k.Address()]
		stray := false
		for _, i := range hs {
			in, err := snap.InSub(k.PubKey(), validators.PeerKey(homes[i]), p)
			if err != nil {
				return err
			}
			stray = stray || !in
		}
		switch {
		case stray:
			rep.RunnersStray++
		case len(hs) > 0:
			rep.RunnersRehomed++
		}
	}
	if n.admittedAtCutoff >= 0 {
		rep.RemovedAdmittedAfter = n.admitted(0) - n.admittedAtCutoff
	}
	return nil
}

// sampleLinks records, per runner and epoch, the first and last height h
// at which the runner held an admitted link under that epoch's pair.
func (n *netDevnet) sampleLinks(runners []*node.Runner, h uint64) {
	if n.linkSeen == nil {
		n.linkSeen = make([]map[uint64][2]uint64, len(runners))
	}
	for i, r := range runners {
		if r == nil || r.Client() == nil {
			continue
		}
		if n.linkSeen[i] == nil {
			n.linkSeen[i] = map[uint64][2]uint64{}
		}
		for _, l := range r.Client().Links() {
			if !l.Up {
				continue
			}
			e := l.Pair.SubsetEpoch
			seen, ok := n.linkSeen[i][e]
			if !ok {
				seen[0] = h
			}
			seen[1] = h
			n.linkSeen[i][e] = seen
		}
	}
}

// reportGoodbyes sums the Goodbyes the validators and the runners sent, by
// §12.5 reason.
func (n *netDevnet) reportGoodbyes(rep *NetworkReport, runners []*node.Runner) {
	rep.GoodbyesByValidators, rep.GoodbyesByRunners = map[string]int64{}, map[string]int64{}
	n.mu.Lock()
	for _, nd := range n.nodes {
		if nd == nil {
			continue
		}
		if st, ok := nd.V.TransportStats(); ok {
			for i, c := range st.GoodbyesSent {
				if c > 0 {
					rep.GoodbyesByValidators[wire.GoodbyeReason(i).String()] += c
				}
			}
		}
	}
	n.mu.Unlock()
	for _, r := range runners {
		if r == nil || r.Client() == nil {
			continue
		}
		st := r.Client().Stats()
		for i, c := range st.GoodbyesSent {
			if c > 0 {
				rep.GoodbyesByRunners[wire.GoodbyeReason(i).String()] += c
			}
		}
	}
}

// overlapTimelines summarizes linkSeen for every epoch change (§5.3).
func (n *netDevnet) overlapTimelines(overlap uint64) []OverlapTimeline {
	var out []OverlapTimeline
	for _, e := range n.epochs()[1:] {
		tl := OverlapTimeline{Epoch: e.Epoch, Activation: e.Activation, Cutoff: e.Activation + overlap}
		for _, seen := range n.linkSeen {
			if s, ok := seen[e.Epoch]; ok {
				if tl.Runners == 0 || s[0] < tl.NewPairFirstUp {
					tl.NewPairFirstUp = s[0]
				}
				tl.NewPairLastUp = max(tl.NewPairLastUp, s[0])
				tl.Runners++
			}
			if s, ok := seen[e.Epoch-1]; ok {
				tl.OldPairLastUp = max(tl.OldPairLastUp, s[1])
			}
		}
		out = append(out, tl)
	}
	return out
}

// peerKeys is every member's peer key by pool position (zero: not
// running; n.mu held).
func (n *netDevnet) peerKeys() []cip11.Hash {
	var out []cip11.Hash
	for _, nd := range n.nodes {
		if nd != nil {
			out = append(out, nd.V.Genesis().Validator.PeerPubKey)
		} else {
			out = append(out, cip11.Hash{})
		}
	}
	return out
}

// ErrStalled: the devnet's chain stopped making blocks.
var ErrStalled = errors.New("devnet: chain stalled")

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

// sampleCoverage records presence_coverage for the newest block of
// validator 0: its PresenceInput's size over the runners connected to at
// least one running validator now.
func (n *netDevnet) sampleCoverage() {
	v, err := n.live(0)
	if err != nil {
		return
	}
	b := v.LastBlock()
	if b == nil || uint64(b.Height) == n.covH {
		return
	}
	n.covH = uint64(b.Height)
	n.mu.Lock()
	conn := map[cip11.Address]bool{}
	for _, nd := range n.nodes {
		if nd != nil {
			for _, a := range nd.V.ConnectedRunners() {
				conn[a] = true
			}
		}
	}
	h := uint64(b.Height)
	if n.connAt == nil {
		n.connAt = map[uint64]int{}
	}
	n.connAt[h] = len(conn)
	delete(n.connAt, h-2)
	// PresenceInput(h) was built as h−1 committed: it is measured against
	// the runners connected then. Blocks 2 and 3 are not counted: their
	// PresenceInput was built while the runners, registered in block 1,
	// were still being admitted, and the devnet's first samples come later
	// than those commits.
	prev, ok := n.connAt[h-1]
	n.mu.Unlock()
	if b.Presence == nil || !ok || prev == 0 || h < 4 {
		return
	}
	size, err := v.RegistrySize(h - 1)
	if err != nil {
		return
	}
	set, err := presence.Decode(*b.Presence, size)
	if err != nil {
		return
	}
	n.mu.Lock()
	n.coverage = append(n.coverage, min(1, float64(set.Len())/float64(prev)))
	n.mu.Unlock()
}

func (n *netDevnet) report(rep *NetworkReport, v *node.Validator, open int, catchUp []uint64, elapsed time.Duration) (*NetworkReport, error) {
	s := v.Stats()
	rep.Blocks = v.Height()
	rep.Submitted, rep.Completed, rep.Expired, rep.Assignments = s.Submitted, s.Completed, s.Expired, s.Assigned
	rep.Lost = open
	n.mu.Lock()
	pushed, dup, notHeld, lat, sent := n.pushed, n.dup, n.notHeld, n.ackLat, n.sentLat
	for _, nd := range n.nodes {
		if nd != nil {
			st := nd.V.Stats()
			pushed += st.Pushed
			dup += int64(nd.V.DuplicateAcks())
			notHeld += int64(nd.V.NotHeld())
			lat.Merge(&st.AckMicros)
			sent.Merge(&st.SentMicros)
		}
	}
	rep.Pushes, rep.DuplicateAcks, rep.NotHeld = pushed, dup, notHeld
	stopped := n.skipped
	n.skipped = maps.Clone(stopped)
	for _, nd := range n.nodes {
		if nd != nil {
			n.addSkipped(nd)
		}
	}
	rep.PushesSkipped, n.skipped = n.skipped, stopped
	rep.StalePushes, rep.PausedPushesAfter = n.stale.Load(), n.pausedAfter.Load()
	rep.Gossip = !n.cfg.NoGossip
	gb := n.gossipBytes
	for _, nd := range n.nodes {
		if nd != nil {
			gb += nd.Gossip().BytesSent
		}
	}
	rep.GossipBytes = gb
	if cv := slices.Clone(n.coverage); len(cv) > 0 {
		slices.Sort(cv)
		rep.CoverageBlocks, rep.CoverageP50, rep.CoverageMin = len(cv), cv[len(cv)/2], cv[0]
		full := 0
		for _, c := range cv {
			if c >= 1 {
				full++
			}
		}
		rep.CoverageFullPct = float64(full*10000/len(cv)) / 100
	}
	rep.Seats = int64(v.Seats()) // validator 0 is never killed: every seat
	if rep.Seats > 0 {
		rep.PushesPerAssign = float64(pushed*100/rep.Seats) / 100
	}
	if lat.Count() > 0 {
		rep.PushP50Millis, rep.PushP99Millis = float64(lat.Quantile(500))/1000, float64(lat.Quantile(990))/1000
		rep.PushMicros = lat
	}
	if sent.Count() > 0 {
		rep.SentP50Millis, rep.SentP99Millis = float64(sent.Quantile(500))/1000, float64(sent.Quantile(990))/1000
	}
	// block intervals: between consecutive first finalizations
	var iv []time.Duration
	for h := uint64(2); h <= rep.Blocks; h++ {
		a, ok1 := n.first[h-1]
		b, ok2 := n.first[h]
		if ok1 && ok2 {
			iv = append(iv, b.Sub(a))
		}
	}
	slices.Sort(iv)
	if len(iv) > 0 {
		rep.BlockP50Millis = float64(iv[len(iv)*50/100].Microseconds()) / 1000
		rep.BlockP99Millis = float64(iv[min(len(iv)-1, len(iv)*99/100)].Microseconds()) / 1000
	}
	rep.AppHashesAgree = true
	for h := uint64(1); h <= rep.Blocks; h++ {
		ds := n.digests[h]
		var first cip11.Hash
		k := 0
		for _, d := range ds {
			if k == 0 {
				first = d
			} else if d != first {
				rep.AppHashesAgree = false
			}
			k++
		}
		if k == len(n.nodes) {
			rep.HeightsCompared++
		}
	}
	n.mu.Unlock()
	rep.Elapsed = elapsed.Seconds()
	if n.cfg.Chaos {
		rep.CaughtUp = true
		victim := len(n.nodes) - 1
		n.mu.Lock()
		nd := n.nodes[victim]
		n.mu.Unlock()
		if nd == nil || len(catchUp) == 0 || nd.V.Height() < catchUp[len(catchUp)-1] {
			rep.CaughtUp = false
		}
		ok, err := n.replays(victim) // the restarted validator's block log
		if err != nil {
			return nil, err
		}
		rep.ReplayAgrees = ok
	}
	if n.cfg.Reconfigure { // the leaver's and the joiner's block logs
		rep.ReplayAgrees = true
		for _, i := range []int{0, len(n.nodes) - 1} {
			ok, err := n.replays(i)
			if err != nil {
				return nil, err
			}
			rep.ReplayAgrees = rep.ReplayAgrees && ok
		}
	}
	return rep, nil
}

// blockLog is validator i's block log.
func (n *netDevnet) blockLog(i int) string { return filepath.Join(n.homes[i], "node", "blocks.jsonl") }

// replays stops validator i and reports whether its block log replays
// against a fresh store (§17); err is a failure to stop it or open the log.
func (n *netDevnet) replays(i int) (bool, error) {
	if err := n.stop(i); err != nil {
		return false, err
	}
	f, err := os.Open(n.blockLog(i))
	if err != nil {
		return false, err
	}
	defer f.Close()
	sum, err := replay.Run(f, replay.Config{})
	if err != nil {
		n.cfg.Logger.Error("devnet: a block log does not replay", "validator", i, "err", err)
	}
	return err == nil && sum.Blocks > 0, nil
}
