package devnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/job"
	"github.com/cip11/cip11/wire"
	"github.com/prometheus/client_golang/prometheus"
)

// Config shapes the single-validator devnet (cip11 devnet): a validator
// producing blocks itself, N runners over real QUIC on loopback, the job
// generator.
type Config struct {
	Runners   int           // 50
	Duration  time.Duration // job generation time (20 s)
	BlockTime time.Duration // 250 ms
	// JobsPerBlock jobs are submitted per block; MultiPerMille of them
	// (default 400; negative: none) have M = verification.runners in
	// 2..3, the rest M = 1. Submission starts once half the runners are
	// present (or after 3 s).
	JobsPerBlock  int // 2
	MultiPerMille int // 400
	TimeoutBlocks uint64
	WorkTime      time.Duration // 30 ms
	FailPerMille  uint32
	// Chaos injects faults while jobs flow: runners killed mid-job (and
	// restarted), connections dropped, the validator restarted on its
	// Pebble directory.
	Chaos bool
	// HTTP, if set, serves the API and dashboard there.
	HTTP    string
	DataDir string // "": a temporary directory
	NoSync  bool
	Seed    uint64
	Logger  *slog.Logger
	// Progress is called about once a second.
	Progress func(Progress)
	// PushWindow is the validator's push pacing (node.ValidatorConfig.PushWindow).
	PushWindow int
	// DrainBlocks bounds the blocks produced after Duration while the last
	// jobs end (default 4 × (TimeoutBlocks + 1) + 20: every job ends by
	// rule within that many blocks, D26's three re-selections included).
	DrainBlocks uint64
	// Phase is the §14 phase the genesis flags select (node.WithPhase);
	// nil: Phase2, node.DefaultGenesisParams' flags.
	Phase *node.Phase
}

// Progress is a progress snapshot of the single-validator devnet.
type Progress struct {
	Elapsed              time.Duration
	Height               uint64
	Present              int
	Submitted, Completed int64
	Expired              int64
	Draining             bool
}

// Report is the devnet's summary (cip11 devnet, -json). Phase is the §14
// phase that ran ("off", "1", "2", "3"); Polled counts the assignments the
// runners running at the end accepted from a poll answer
// (quic.ClientStats.Delivered), PollAnswers the assignments their poll
// answers carried, first or after a push (node.Runner.PollAnswers).
type Report struct {
	Phase       string `json:"phase"`
	Runners     int    `json:"runners"`
	Blocks      uint64 `json:"blocks"`
	Submitted   int64  `json:"jobs_submitted"`
	Assigned    int64  `json:"jobs_assigned"`
	Pushed      int64  `json:"pushes"`
	Acked       int64  `json:"acks"`
	Polled      int64  `json:"poll_deliveries"`
	PollAnswers int64  `json:"poll_answers"`
	Completed   int64  `json:"jobs_completed"`
	Expired     int64  `json:"jobs_expired"`
	Lost        int    `json:"jobs_lost"`
	// Interrupted: the run was stopped (SIGINT) before it ended and this
	// is the report so far; Open jobs had not ended (not counted lost).
	Interrupted   bool    `json:"interrupted,omitempty"`
	Open          int     `json:"jobs_open,omitempty"`
	Reselections  int64   `json:"reselections"`
	PushP50Millis float64 `json:"push_latency_p50_ms"`
	PushP99Millis float64 `json:"push_latency_p99_ms"`
	// PushMicros is the push-latency histogram behind the two figures
	// above (harnesses pool it across runs).
	PushMicros job.Histogram `json:"-"`
	// SentMicros and ServeMicros break PushMicros down (NetworkReport's).
	SentMicros, ServeMicros job.Histogram `json:"-"`
	// RunnerChainChecks is NetworkReport's.
	RunnerChainChecks int64   `json:"runner_chain_checks"`
	JobBlocksP50      uint64  `json:"job_latency_p50_blocks"`
	JobBlocksP99      uint64  `json:"job_latency_p99_blocks"`
	FirstDraws        int64   `json:"first_draws"`
	FirstDrawHitPct   float64 `json:"first_draw_present_pct"`
	ValidatorStarts   int     `json:"validator_starts"`
	RunnerKills       int     `json:"runner_kills"`
	ConnDrops         int     `json:"connection_drops"`
	DataDir           string  `json:"data_dir,omitempty"`
	BlockLog          string  `json:"block_log,omitempty"`
	Elapsed           float64 `json:"elapsed_s"`
}

// swapChain is the validator of the current start (nil while it
// restarts): the runners' chain (node.LocalChain (with Pick)) and the HTTP API's.
type swapChain struct {
	mu sync.RWMutex
	v  *node.Validator
}

func (c *swapChain) cur() (*node.Validator, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.v == nil {
		return nil, node.ErrClosed
	}
	return c.v, nil
}

func (c *swapChain) set(v *node.Validator) {
	c.mu.Lock()
	c.v = v
	c.mu.Unlock()
}

// devnet is a running devnet.
type devnet struct {
	ctx     context.Context // the runners' lifetime
	cfg     Config
	d       *node.GeneratedGenesis
	chain   *swapChain
	vcfg    node.ValidatorConfig
	runners []*node.Runner
	metrics *node.Metrics    // the validator's series, kept across restarts
	api     *httpapi.Metrics // the HTTP API's
	reg     *prometheus.Registry
	rep     Report
	// stats carried across validator restarts (a restart rebuilds the
	// consensus-visible counts from the block log, not the push counts)
	pushed, acked, firstDraws, firstHits int64
	ackLat, sentLat                      job.Histogram // microseconds
	chaosN                               int
}

// Validate reports the first field out of range (zero values take their
// defaults), wrapping node.ErrBadRequest.
func (c *Config) Validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: devnet: "+f, append([]any{node.ErrBadRequest}, a...)...)
	}
	switch {
	case c.Runners < 0 || c.Runners > 100_000:
		return bad("runners %d (1 … 100000)", c.Runners)
	case c.Duration < 0:
		return bad("duration %v is negative", c.Duration)
	case c.BlockTime < 0:
		return bad("block time %v is negative", c.BlockTime)
	case c.JobsPerBlock < 0:
		return bad("jobs per block %d is negative", c.JobsPerBlock)
	case c.MultiPerMille > 1000:
		return bad("multi per mille %d (-1 … 1000)", c.MultiPerMille)
	case c.WorkTime < 0:
		return bad("work time %v is negative", c.WorkTime)
	case c.FailPerMille > 1000:
		return bad("fail per mille %d (0 … 1000)", c.FailPerMille)
	case c.Phase != nil && *c.Phase > node.Phase3:
		return bad("phase %d (0 … 3)", *c.Phase)
	}
	return nil
}

// defaults fills the zero fields.
func (c *Config) defaults() {
	c.load().defaults()
	if c.BlockTime == 0 {
		c.BlockTime = 250 * time.Millisecond
	}
	if c.DrainBlocks == 0 {
		c.DrainBlocks = 4*(c.TimeoutBlocks+1) + 20
	}
}

func (c *Config) load() load {
	return load{runners: &c.Runners, duration: &c.Duration, perBlock: &c.JobsPerBlock, multiPerMille: &c.MultiPerMille,
		timeout: &c.TimeoutBlocks, work: &c.WorkTime, logger: &c.Logger}
}

// Run runs the single-validator devnet until cfg.Duration has passed and
// every job has ended (or cfg.DrainBlocks ran out), and reports.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	p := node.DefaultGenesisParams()
	if cfg.Phase != nil {
		var err error
		if p, err = node.WithPhase(p, *cfg.Phase); err != nil {
			return nil, err
		}
	}
	d, err := node.GenerateGenesis(node.GenesisOptions{Seed: cfg.Seed, Runners: cfg.Runners, QUIC: "127.0.0.1:0", HTTP: cfg.HTTP, Params: &p})
	if err != nil {
		return nil, err
	}
	n := &devnet{ctx: ctx, cfg: cfg, d: d, chain: &swapChain{}, reg: prometheus.NewRegistry()}
	if n.metrics, err = node.PrometheusMetrics(n.reg); err != nil {
		return nil, err
	}
	if n.api, err = httpapi.PrometheusMetrics(n.reg); err != nil {
		return nil, err
	}
	dir := cfg.DataDir
	tmp := dir == ""
	if tmp { // one temporary directory for every validator start, removed at the end
		if dir, err = os.MkdirTemp("", "cip11-devnet-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	n.vcfg = node.ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: dir, BlockTime: cfg.BlockTime,
		NoSync: cfg.NoSync, Seed: cfg.Seed, Logger: cfg.Logger, Metrics: n.metrics, Registerer: n.reg, SkipPerMille: 20, PushWindow: cfg.PushWindow}
	v, err := node.NewValidator(n.vcfg)
	if err != nil {
		return nil, err
	}
	n.vcfg.DataDir = v.Dir()
	if a := v.Addr(); a != nil { // restarts reuse the port
		n.vcfg.Listen = a.String()
	}
	n.rep.Phase = v.Phase().String()
	n.chain.set(v)
	n.rep.ValidatorStarts = 1
	n.rep.Runners = cfg.Runners
	if !tmp {
		n.rep.DataDir = n.vcfg.DataDir
	}
	defer func() {
		for _, r := range n.runners {
			if r != nil {
				r.Close()
			}
		}
		if v, _ := n.chain.cur(); v != nil {
			v.Close()
		}
	}()
	if cfg.HTTP != "" {
		srv, err := n.serveHTTP(cfg.HTTP)
		if err != nil {
			return nil, err
		}
		defer srv.Shutdown(node.DefaultHTTPShutdown)
	}
	for i := range cfg.Runners {
		r, err := n.startRunner(i)
		if err != nil {
			return nil, err
		}
		n.runners = append(n.runners, r)
	}
	return n.run(ctx)
}

func (n *devnet) startRunner(i int) (*node.Runner, error) {
	return node.NewRunner(n.ctx, node.RunnerConfig{Genesis: n.d.Genesis, Key: n.d.RunnerKeys[i], Chain: node.LocalChain{Pick: n.chain.cur}, WorkTime: n.cfg.WorkTime,
		FailPerMille: n.cfg.FailPerMille, Tick: 10 * time.Millisecond, Validator: n.vcfg.Listen, Logger: runnerLogger(n.cfg.Logger),
		Seed: n.cfg.Seed*1000 + uint64(i)})
}

// handlerSwap serves the API of the devnet's current validator (one
// handler per validator start).
type handlerSwap struct {
	n  *devnet
	mu sync.Mutex
	v  *node.Validator
	h  http.Handler
}

func (hs *handlerSwap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, err := hs.n.chain.cur()
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"validator restarting"}` + "\n"))
		return
	}
	hs.mu.Lock()
	if hs.v != v {
		h, err := httpapi.NewHandler(node.Backend{V: v}, httpapi.Options{PollDisabled: v.Genesis().P().PollDisabled, Gatherer: hs.n.reg, Metrics: hs.n.api, Logger: hs.n.cfg.Logger})
		if err != nil {
			hs.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"internal error"}` + "\n"))
			return
		}
		hs.v, hs.h = v, h
	}
	h := hs.h
	hs.mu.Unlock()
	h.ServeHTTP(w, r)
}

func (n *devnet) serveHTTP(addr string) (*node.HTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := node.ServeHTTP(ln, &handlerSwap{n: n}, n.cfg.Logger)
	n.cfg.Logger.Info("devnet HTTP API and dashboard", "addr", "http://"+ln.Addr().String())
	return srv, nil
}

func (n *devnet) run(ctx context.Context) (*Report, error) {
	cfg := n.cfg
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xdef))
	gen := cfg.load().generator(rng)
	start := time.Now()
	t := time.NewTicker(cfg.BlockTime)
	defer t.Stop()
	lastProgress := start
	nextChaos := start.Add(2 * time.Second)
	draining, started := false, false
	var drainUntil uint64
	for {
		select {
		case <-ctx.Done():
			v, err := n.chain.cur()
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
			}
			_, open := v.JobStates()
			r := n.report(v, 0, time.Since(start))
			r.Interrupted, r.Open = true, len(open)
			return r, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		case <-t.C:
		}
		now := time.Now()
		if !draining && now.Sub(start) >= cfg.Duration {
			v, err := n.chain.cur()
			if err != nil {
				return nil, err
			}
			draining, drainUntil = true, v.Height()+cfg.DrainBlocks
		}
		v, err := n.chain.cur()
		if err != nil {
			return nil, err
		}
		if !started { // PhaseOff: no presence; the runners' heartbeats are in after two blocks
			started = presentCount(v) >= (cfg.Runners+1)/2 || now.Sub(start) > 3*time.Second || (v.Server() == nil && v.Height() >= 2)
		}
		if !draining && started {
			for _, spec := range gen.block() {
				if _, err := v.SubmitJob(spec); err != nil {
					return nil, fmt.Errorf("submit: %w", err)
				}
			}
		}
		if err := v.ProduceBlock(); err != nil {
			return nil, err
		}
		if cfg.Chaos && !draining && now.After(nextChaos) {
			if err := n.chaos(rng); err != nil {
				return nil, err
			}
			nextChaos = now.Add(time.Duration(800+rng.IntN(800)) * time.Millisecond)
		}
		if cfg.Progress != nil && now.Sub(lastProgress) >= time.Second {
			lastProgress = now
			v, _ := n.chain.cur()
			s := v.Stats()
			cfg.Progress(Progress{Elapsed: now.Sub(start), Height: v.Height(), Present: presentCount(v),
				Submitted: s.Submitted, Completed: s.Completed, Expired: s.Expired, Draining: draining})
		}
		if draining {
			v, _ := n.chain.cur()
			counts, open := v.JobStates()
			_ = counts
			if len(open) == 0 || v.Height() >= drainUntil {
				return n.report(v, len(open), time.Since(start)), nil
			}
		}
	}
}

// presentCount is the validator's local presence size (0 in PhaseOff).
func presentCount(v *node.Validator) int {
	if v.Server() == nil {
		return 0
	}
	return len(v.Server().Present())
}

// chaos injects one fault: kill a runner that is mid-job (and start it
// again), drop a runner's connection, or restart the validator on its
// Pebble directory.
func (n *devnet) chaos(rng *rand.Rand) error {
	n.chaosN++
	switch n.chaosN % 3 {
	case 1: // kill a runner mid-job (one executing, if any), restart it
		i := rng.IntN(len(n.runners))
		for j := range n.runners {
			if k := (i + j) % len(n.runners); n.runners[k].Busy() > 0 {
				i = k
				break
			}
		}
		n.runners[i].Close()
		n.rep.RunnerKills++
		r, err := n.startRunner(i)
		if err != nil {
			return err
		}
		n.runners[i] = r
	case 2: // drop a connection: the validator says Goodbye, the runner reconnects
		v, _ := n.chain.cur()
		i := rng.IntN(len(n.runners))
		if v.Server() != nil { // PhaseOff: no connections
			_ = v.Server().Goodbye(n.runners[i].Address(), wire.GoodbyeShutdown, "chaos", nil)
			n.rep.ConnDrops++
		}
	case 0: // restart the validator on its directory
		v, _ := n.chain.cur()
		n.keep(v)
		n.chain.set(nil)
		if err := v.Close(); err != nil {
			return err
		}
		var nv *node.Validator
		var err error
		for range 50 { // the UDP port is free again at once on Linux; retry briefly otherwise
			if nv, err = node.NewValidator(n.vcfg); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("validator restart: %w", err)
		}
		n.chain.set(nv)
		n.rep.ValidatorStarts++
	}
	return nil
}

// runnerParts is the runners' part of the push latency: their serve
// times (quic.Client.ServeLatency) pooled, and the still-assigned checks
// their chain views answered (node.Runner.ChainChecks); nil entries (a
// runner between restarts) are skipped.
func runnerParts(runners []*node.Runner) (serve job.Histogram, chainChecks int64) {
	for _, r := range runners {
		if r != nil {
			sl := r.Client().ServeLatency()
			serve.Merge(&sl)
			chainChecks += r.ChainChecks()
		}
	}
	return serve, chainChecks
}

// keep carries a stopping validator's transport-side counts into the
// report (a restart rebuilds the chain-derived ones from its block log).
func (n *devnet) keep(v *node.Validator) {
	s := v.Stats()
	n.pushed += s.Pushed
	n.acked += s.Acked
	n.firstDraws += s.FirstDraws
	n.firstHits += s.FirstDrawPresent
	n.ackLat.Merge(&s.AckMicros)
	n.sentLat.Merge(&s.SentMicros)
}

func (n *devnet) report(v *node.Validator, open int, elapsed time.Duration) *Report {
	s := v.Stats()
	r := n.rep
	r.Blocks = v.Height()
	r.Submitted, r.Assigned, r.Completed, r.Expired, r.Reselections = s.Submitted, s.Assigned, s.Completed, s.Expired, s.Reselections
	r.Pushed, r.Acked = n.pushed+s.Pushed, n.acked+s.Acked
	r.FirstDraws = n.firstDraws + s.FirstDraws
	hits := n.firstHits + s.FirstDrawPresent
	if r.FirstDraws > 0 {
		r.FirstDrawHitPct = float64(hits*10000/r.FirstDraws) / 100
	}
	lat := n.ackLat
	lat.Merge(&s.AckMicros)
	r.SentMicros = n.sentLat
	r.SentMicros.Merge(&s.SentMicros)
	if lat.Count() > 0 {
		r.PushP50Millis = float64(lat.Quantile(500)) / 1000
		r.PushP99Millis = float64(lat.Quantile(990)) / 1000
		r.PushMicros = lat
	}
	if s.JobLatencyBlocks.Count() > 0 {
		r.JobBlocksP50, r.JobBlocksP99 = s.JobLatencyBlocks.Quantile(500), s.JobLatencyBlocks.Quantile(990)
	}
	r.Lost = open
	for _, rn := range n.runners {
		if rn != nil {
			r.Polled += rn.Client().Stats().Delivered
			r.PollAnswers += rn.PollAnswers()
		}
	}
	r.ServeMicros, r.RunnerChainChecks = runnerParts(n.runners)
	if r.DataDir != "" {
		r.BlockLog = filepath.Join(r.DataDir, "blocks.jsonl")
	}
	r.Elapsed = elapsed.Seconds()
	return &r
}
