package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/adapters/node/httpapi"
	"github.com/cip11/cip11/internal/devkeys"
	"github.com/cip11/cip11/job"
)

// TestPushLatencyProcesses is a harness (CIP11_BENCH_PROC=1; rounds
// CIP11_BENCH_ROUNDS, default 2): push latency (commit → the runner's
// Accepted JobAck, the validators' own samples from GET /dashboard.json)
// with every validator its own `cip11 validator` process, as deployed —
// the single-validator chain (block time 200 ms) against the 4-validator
// CometBFT network with k = 3 — and the same 50 in-process runners and job
// load in both, alternating, in one run. CIP11_BENCH_COMMIT sets the
// network's timeout_commit (default 0: the next height starts at once; a
// round takes about the single validator's 200 ms here); each round logs
// both mean block intervals. CIP11_BENCH_TOGETHER=1 runs the two chains
// at once instead (pushRound): a control in which both meet the
// same load on the two shared cores. The in-process harness
// (cmd/internal/devnet TestPushLatencyRatio) puts four validators, their
// CometBFT nodes and the runners in one Go process on two cores, where
// the consensus work of the next height and the runners share two Ps.
func TestPushLatencyProcesses(t *testing.T) {
	if os.Getenv("CIP11_BENCH_PROC") == "" {
		t.Skip("set CIP11_BENCH_PROC=1 to run the multi-process push-latency harness")
	}
	rounds := 2
	fmt.Sscan(os.Getenv("CIP11_BENCH_ROUNDS"), &rounds)
	var single, network []float64
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.TrimSpace(string(b))
	}
	tc, err := time.ParseDuration(cmp.Or(os.Getenv("CIP11_BENCH_COMMIT"), "0s"))
	if err != nil || tc < 0 {
		t.Fatalf("CIP11_BENCH_COMMIT=%q: want a duration ≥ 0", os.Getenv("CIP11_BENCH_COMMIT"))
	}
	t.Logf("network timeout_commit %v (CIP11_BENCH_COMMIT); single-validator block time 200ms", tc)
	together := os.Getenv("CIP11_BENCH_TOGETHER") != ""
	if together {
		t.Logf("CIP11_BENCH_TOGETHER: both chains run at once, each with its 50 runners (this process's CPU and collections are both chains')")
	}
	for r := range rounds {
		sr, nr := pushRound(t, uint64(10+r), tc, together)
		s, sb, sc, n, nb, nc := sr.samples, sr.blockMs, sr.cpu, nr.samples, nr.blockMs, nr.cpu
		t.Logf("round %d: single p50 %.2f p99 %.2f ms (%d, block %.0f ms); network p50 %.2f p99 %.2f ms (%d, block %.0f ms) (load %s)", r,
			quant(s, 500), quant(s, 990), len(s), sb, quant(n, 500), quant(n, 990), len(n), nb, load())
		t.Logf("round %d CPU, cores of 2: single validator %.2f + runners %.2f; network validators %.2f + runners %.2f; run-queue wait, s a second: single validator %.3f + runners %.3f, network validators %.3f + runners %.3f", r,
			sc.validators, sc.harness, nc.validators, nc.harness, sc.valWait, sc.harnessWait, nc.valWait, nc.harnessWait)
		for _, x := range []struct {
			name string
			c    pushCPU
		}{{"single", sc}, {"network", nc}} {
			t.Logf("round %d %s runners: %d acks; pushes ahead of the view: %d attested, %d waited (%.1f ms each on average); served (assignment read → ack written) p50 %.2f p99 %.2f ms; still-assigned checks asked of the chain %d; the runners' process: %d collections, %.1f ms paused", r, x.name,
				x.c.acks, x.c.attested, x.c.waited, x.c.waitMs/float64(max(1, x.c.waited)),
				float64(x.c.serveHist.Quantile(500))/1000, float64(x.c.serveHist.Quantile(990))/1000, x.c.chainChecks, x.c.gcs, x.c.gcPause)
		}
		single, network = append(single, s...), append(network, n...)
	}
	t.Logf("pooled over %d rounds: single p50 %.2f p99 %.2f ms (%d acks); network k=3 p50 %.2f p99 %.2f ms (%d acks); ratio p50 %.2f, p99 %.2f (load %s)",
		rounds, quant(single, 500), quant(single, 990), len(single), quant(network, 500), quant(network, 990), len(network),
		quant(network, 500)/quant(single, 500), quant(network, 990)/quant(single, 990), load())
	lo50, hi50 := bootRatio(single, network, 500)
	lo99, hi99 := bootRatio(single, network, 990)
	t.Logf("pooled ratio, 90%% bootstrap interval (1,000 resamples of each side's samples): p50 %.2f–%.2f, p99 %.2f–%.2f", lo50, hi50, lo99, hi99)
}

// bootRatio is the 5th and 95th percentiles of the network/single ratio of
// the perMille quantile over 1,000 bootstrap resamples (each side's
// samples drawn with replacement, a fixed seed): how far the pooled ratio
// moves with which samples a run happened to get.
func bootRatio(single, network []float64, perMille int) (lo, hi float64) {
	if len(single) == 0 || len(network) == 0 {
		return 0, 0
	}
	rng := rand.New(rand.NewPCG(11, 28))
	draw := func(xs, buf []float64) []float64 {
		buf = buf[:0]
		for range xs {
			buf = append(buf, xs[rng.IntN(len(xs))])
		}
		return buf
	}
	var sb, nb []float64
	ratios := make([]float64, 0, 1000)
	for range 1000 {
		sb, nb = draw(single, sb), draw(network, nb)
		ratios = append(ratios, quant(nb, perMille)/quant(sb, perMille))
	}
	slices.Sort(ratios)
	return ratios[50], ratios[949]
}

func quant(xs []float64, perMille int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*perMille/1000)]
}

// pushCPU is the CPU the run's processes used over its 15 s of jobs, in
// cores (CPU seconds per wall second): the validator processes together
// and this process (the 50 runners, the chain view and the submitter).
type pushCPU struct {
	validators, harness float64
	// run-queue wait (/proc/pid/task/*/schedstat), seconds per wall
	// second: how long the processes' threads were runnable but not
	// running — the two cores' contention
	valWait, harnessWait float64
	// the runners' push handling (quic.ClientStats): acks, pushes ahead of
	// the runner's view settled by the push (attested) or waited for.
	acks, attested, waited int64
	waitMs                 float64
	// serveHist: each push's JobAssignment read → JobAck written on the
	// runner (µs); chainChecks: still-assigned checks the chain view
	// answered (a push below the runner's view).
	serveHist   job.Histogram
	chainChecks int64
	// the runners' process (this one): garbage collections over the 15 s
	// and their stop-the-world pauses in all (ms)
	gcs     uint32
	gcPause float64
}

// cpuSeconds is the user+system CPU of process pid (/proc/pid/stat; 0
// when unreadable).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // fields from 3 on
	if len(f) < 13 {
		return 0
	}
	var u, k float64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &k)
	return (u + k) / 100 // USER_HZ
}

// runWait is the time the threads of process pid spent runnable on a
// run queue, not running (the second field of each task's schedstat), in
// seconds; 0 when unreadable.
func runWait(pid int) float64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var ns float64
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fs := strings.Fields(string(b)); len(fs) >= 2 {
			var w float64
			fmt.Sscan(fs[1], &w)
			ns += w
		}
	}
	return ns / 1e9
}

// pushResult is one chain's figures from a push run: every validator's
// push-latency samples (ms), the mean block interval (ms) and the CPU its
// processes used while jobs were submitted.
type pushResult struct {
	samples []float64
	blockMs float64
	cpu     pushCPU
}

// pushRound runs the single-validator chain and the network (CometBFT
// timeout_commit tc) as processes for 15 s of jobs each: one after the
// other, or, together, at once — a control in which both chains meet the
// same load on the shared cores (each deployed validator has a machine
// of its own; here five or six processes share two cores, and
// alternating runs give the network the contention of its four processes
// alone).
func pushRound(t *testing.T, seed uint64, tc time.Duration, together bool) (single, network pushResult) {
	if together {
		s := startPushChain(t, false, seed, 0)
		defer s.close()
		n := startPushChain(t, true, seed, tc)
		defer n.close()
		r := runPushChains(s, n)
		return r[0], r[1]
	}
	one := func(network bool, tc time.Duration) pushResult {
		c := startPushChain(t, network, seed, tc)
		defer c.close()
		return runPushChains(c)[0]
	}
	return one(false, 0), one(true, tc)
}

// runPushChains submits jobs to every chain over the same 15 s and
// returns each chain's figures.
func runPushChains(chains ...*pushChain) []pushResult {
	for _, c := range chains {
		c.begin()
	}
	for end := time.Now().Add(pushJobsFor); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		for _, c := range chains {
			c.step()
		}
	}
	out := make([]pushResult, len(chains))
	for i, c := range chains {
		out[i].cpu, out[i].blockMs = c.end()
	}
	time.Sleep(5 * time.Second) // the last pushes are acked
	for i, c := range chains {
		out[i].samples = c.collect(&out[i].cpu)
	}
	return out
}

// pushJobsFor is how long a push run submits jobs.
const pushJobsFor = 15 * time.Second

// pushChain is one chain of the push harness: its validator processes,
// the 50 in-process runners and the job submitter.
type pushChain struct {
	t        *testing.T
	apis     []string
	procs    []*proc
	rs       []*node.Runner
	cancel   context.CancelFunc
	rng      *rand.Rand
	hc       *http.Client
	nonce    uint64
	last     uint64
	ms0      runtime.MemStats
	v0, s0   float64 // CPU seconds at begin: validators, this process
	vw0, sw0 float64 // run-queue wait at begin
	h0       uint64
	t0       time.Time
}

// startPushChain writes a genesis, starts its validator processes and
// 50 runners in this process, and waits for the chain past height 2.
func startPushChain(t *testing.T, network bool, seed uint64, tc time.Duration) *pushChain {
	const runners = 50
	dir := filepath.Join(t.TempDir(), "chain")
	c := &pushChain{t: t, rng: rand.New(rand.NewPCG(seed, 0xde7)), hc: &http.Client{Timeout: 2 * time.Second}}
	var g *node.Genesis
	if network {
		base := freeNetworkBase(t, 4)
		if code, out, errOut := cli("genesis", "-validators", "4", "-o", dir, "-runners", fmt.Sprint(runners), "-base-port", fmt.Sprint(base), "-seed", fmt.Sprint(seed), "-timeout-commit", tc.String()); code != 0 {
			t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
		}
		for i := range 4 {
			home := filepath.Join(dir, fmt.Sprintf("v%d", i))
			c.procs = append(c.procs, start(t, "validator", "-home", home, "-log", "warn"))
			c.apis = append(c.apis, fmt.Sprintf("http://127.0.0.1:%d", base+10*i+2))
		}
		var err error
		if g, err = node.LoadGenesis(filepath.Join(dir, "v0", "cip11.json")); err != nil {
			t.Fatal(err)
		}
	} else {
		qport, hport := freePort(t, "udp"), freePort(t, "tcp")
		if code, out, errOut := cli("genesis", "-o", dir, "-runners", fmt.Sprint(runners), "-seed", fmt.Sprint(seed),
			"-quic", fmt.Sprintf("127.0.0.1:%d", qport), "-http", fmt.Sprintf("127.0.0.1:%d", hport)); code != 0 {
			t.Fatalf("genesis: exit %d: %s%s", code, out, errOut)
		}
		c.procs = append(c.procs, start(t, "validator", "-genesis", filepath.Join(dir, "genesis.json"), "-key", filepath.Join(dir, "validator.key"),
			"-data", filepath.Join(dir, "data"), "-block-time", "200ms", "-log", "warn"))
		c.apis = append(c.apis, fmt.Sprintf("http://127.0.0.1:%d", hport))
		var err error
		if g, err = node.LoadGenesis(filepath.Join(dir, "genesis.json")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the chain past height 2", 90*time.Second, func() bool { return c.height() > 2 })
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	// The runners' chain view: §10.1 has a runner wait until an
	// assignment's height is final in its own view, so the view must follow
	// the chain closely (as the in-process devnets' 10 ms tick does) without
	// 50 runners polling HTTP: one poller every 5 ms over every validator's
	// API, failing over and preferring the highest height, as a runner
	// process's chain view does (node.NewHTTPChain).
	pool, err := node.NewHTTPChain(c.apis, nil)
	if err != nil {
		c.close()
		t.Fatal(err)
	}
	view := &followedChain{HTTPChain: pool}
	go view.follow(ctx, 5*time.Millisecond)
	for i := range runners {
		k, err := node.LoadRunnerKey(filepath.Join(dir, fmt.Sprintf("runner-%04d.key", i)))
		if err != nil {
			c.close()
			t.Fatal(err)
		}
		r, err := node.NewRunner(ctx, node.RunnerConfig{Genesis: g, Key: k, Chain: view,
			WorkTime: 30 * time.Millisecond, Tick: 5 * time.Millisecond, Seed: seed*1000 + uint64(i)})
		if err != nil {
			c.close()
			t.Fatal(err)
		}
		c.rs = append(c.rs, r)
	}
	c.last = c.height()
	return c
}

// height is validator 0's /status height (0 on an error).
func (c *pushChain) height() uint64 {
	var st struct {
		Height uint64 `json:"height,string"`
	}
	if err := getJSON(c.apis[0]+"/status", &st); err != nil {
		return 0
	}
	return st.Height
}

// validators sums of over the validator processes.
func (c *pushChain) validators(of func(pid int) float64) float64 {
	var x float64
	for _, p := range c.procs {
		x += of(p.cmd.Process.Pid)
	}
	return x
}

// begin takes the CPU, wait, collection and height baselines.
func (c *pushChain) begin() {
	runtime.ReadMemStats(&c.ms0)
	c.v0, c.s0 = c.validators(cpuSeconds), cpuSeconds(os.Getpid())
	c.vw0, c.sw0 = c.validators(runWait), runWait(os.Getpid())
	c.last = max(c.last, c.height())
	c.h0, c.t0 = c.last, time.Now()
}

// step submits two jobs when the chain has a new height since the last
// step (40 % of them for 2 or 3 runners), spread over the validators'
// APIs.
func (c *pushChain) step() {
	h := c.height()
	if h <= c.last {
		return
	}
	c.last = h
	for range 2 {
		c.nonce++
		m := uint32(1)
		if c.rng.IntN(1000) < 400 {
			m = 2 + uint32(c.rng.IntN(2))
		}
		b, _ := json.Marshal(httpapi.JobRequest{Submitter: devkeys.Submitter(c.rng.IntN(8)), JobKind: uint8(c.rng.IntN(6)), Runners: m,
			TimeoutBlocks: 12, WorkMillis: 30, Nonce: c.nonce})
		resp, err := c.hc.Post(c.apis[int(c.nonce)%len(c.apis)]+"/jobs", "application/json", bytes.NewReader(b))
		if err != nil {
			c.t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			c.t.Fatalf("POST /jobs: %s", resp.Status)
		}
	}
}

// end is the CPU figures since begin and the mean block interval (ms).
// This process's figures (harness CPU and wait, collections) are the
// whole process's: with two chains at once, both chains' runners.
func (c *pushChain) end() (pushCPU, float64) {
	wall := time.Since(c.t0).Seconds()
	cpu := pushCPU{validators: (c.validators(cpuSeconds) - c.v0) / wall, harness: (cpuSeconds(os.Getpid()) - c.s0) / wall,
		valWait: (c.validators(runWait) - c.vw0) / wall, harnessWait: (runWait(os.Getpid()) - c.sw0) / wall}
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	cpu.gcs, cpu.gcPause = ms1.NumGC-c.ms0.NumGC, float64(ms1.PauseTotalNs-c.ms0.PauseTotalNs)/1e6
	return cpu, float64(time.Since(c.t0).Milliseconds()) / float64(max(1, c.height()-c.h0))
}

// collect is every validator's push-latency samples (ms); it adds the
// runners' push figures to cpu.
func (c *pushChain) collect(cpu *pushCPU) []float64 {
	var samples []float64
	for _, api := range c.apis {
		var d struct {
			Lat []float64 `json:"push_latency_ms"`
		}
		if err := getJSON(api+"/dashboard.json", &d); err != nil {
			c.t.Fatal(err)
		}
		samples = append(samples, d.Lat...)
	}
	for _, r := range c.rs {
		st := r.Client().Stats()
		cpu.acks += st.Acks
		cpu.attested += st.PushesAttested
		cpu.waited += st.PushesWaited
		cpu.waitMs += float64(st.PushWaitMicros) / 1000
		sl := r.Client().ServeLatency()
		cpu.serveHist.Merge(&sl)
		cpu.chainChecks += r.ChainChecks()
	}
	return samples
}

// close stops the runners and kills the validator processes.
func (c *pushChain) close() {
	if c.cancel != nil {
		c.cancel()
	}
	for _, r := range c.rs {
		r.Close()
	}
	for _, p := range c.procs {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// followedChain is an HTTPChain whose Height is a cached value one
// goroutine refreshes (follow).
type followedChain struct {
	node.HTTPChain
	h atomic.Uint64
}

func (c *followedChain) follow(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if h, err := c.HTTPChain.Height(ctx); err == nil && h > c.h.Load() {
			c.h.Store(h)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *followedChain) Height(context.Context) (uint64, error) { return c.h.Load(), nil }

// bootRatio's interval brackets the pooled ratio (each side resampled on
// its own), is the same on every call (fixed seed), and is empty without
// samples.
func TestBootRatio(t *testing.T) {
	var single, double, mixed []float64
	for i := range 500 {
		x := float64(1 + i%37)
		single, double = append(single, x), append(double, 2*x)
		mixed = append(mixed, x*float64(1+i%3))
	}
	for _, c := range []struct {
		name     string
		network  []float64
		perMille int
	}{{"same", single, 990}, {"doubled", double, 500}, {"mixed", mixed, 500}, {"mixed p99", mixed, 990}} {
		r := quant(c.network, c.perMille) / quant(single, c.perMille)
		lo, hi := bootRatio(single, c.network, c.perMille)
		if lo > r || hi < r || lo > hi {
			t.Errorf("%s: %.3f–%.3f, want an interval around %.3f", c.name, lo, hi, r)
		}
		if lo2, hi2 := bootRatio(single, c.network, c.perMille); lo2 != lo || hi2 != hi {
			t.Errorf("%s: %.3f–%.3f, then %.3f–%.3f", c.name, lo, hi, lo2, hi2)
		}
	}
	if lo, hi := bootRatio(nil, double, 500); lo != 0 || hi != 0 {
		t.Fatalf("no samples: %.3f–%.3f, want 0–0", lo, hi)
	}
}
