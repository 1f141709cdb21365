package cometbft

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/node"
)

// TestScaleValidators is a harness (CIP11_BENCH_SCALE=N, N validators;
// CIP11_BENCH_SECONDS, default 60): how far an in-process network of N
// CIP-11 validators on CometBFT gets on this machine, with MIN_SUBSET = MAX_SUBSET = N
// so that effective_k = N — the shape §8.4's Mode A needs (K_HARD_MIN =
// 20). It reports blocks a second, CPU seconds a block (user + system,
// the whole process), resident memory, and whether the snapshot passes
// the §8.4 guard. Timeouts are raised to fit two cores.
func TestScaleValidators(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CIP11_BENCH_SCALE"))
	if n < 1 {
		t.Skip("set CIP11_BENCH_SCALE=N to run the N-validator scale harness")
	}
	secs, _ := strconv.Atoi(os.Getenv("CIP11_BENCH_SECONDS"))
	if secs <= 0 {
		secs = 60
	}
	p := node.DefaultGenesisParams()
	p.MinSubset, p.MaxSubset = uint32(n), uint32(n) // effective_k = clamp(ceil(log2 n)+1, MIN, MAX) = n (§8.4)
	p.THard = uint32(n/2 + 1)
	startAt := time.Now()
	nw, nodes, _ := startOpts(t, NetworkOptions{Validators: n, Runners: 10, Seed: 2, BasePort: freeBase(t, n), Params: &p,
		TimeoutPropose: 3 * time.Second, TimeoutVote: time.Second}, nil)
	snap, err := nw.Homes[0].Genesis.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	withFlag := p
	withFlag.PresenceHardExcludeEnabled = true
	t.Logf("%d validators: k = %d, Mode A effective if PRESENCE_HARD_EXCLUDE_ENABLED were set (§8.4 guard): %v", n, snap.K(p), snap.ModeAEffective(withFlag))
	t.Logf("started %d nodes in %v", n, time.Since(startAt).Round(time.Millisecond))
	// measure from the first block on
	deadline := time.Now().Add(2 * time.Minute)
	for nodes[0].V.Height() < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	h0, cpu0, t0 := nodes[0].V.Height(), cpuSeconds(), time.Now()
	time.Sleep(time.Duration(secs) * time.Second)
	h1, cpu1, el := nodes[0].V.Height(), cpuSeconds(), time.Since(t0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	blocks := h1 - h0
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%d validators, %.0f s: %d blocks (%.2f blocks/s), CPU %.2f s a block (%.0f%% of 2 cores), RSS %d MiB, Go heap %d MiB (load %s)",
		n, el.Seconds(), blocks, float64(blocks)/el.Seconds(), (cpu1-cpu0)/max(float64(blocks), 1), 100*(cpu1-cpu0)/el.Seconds()/2,
		rssMiB(), ms.HeapAlloc>>20, strings.TrimSpace(string(load)))
	if blocks == 0 {
		t.Errorf("no block in %v", el)
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func rssMiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb >> 10
			}
		}
	}
	return 0
}
