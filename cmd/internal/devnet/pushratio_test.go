package devnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cip11/cip11/job"
)

// TestPushLatencyRatio is a harness, not a timed assertion (gated by
// CIP11_BENCH_PUSH=1): it runs the single-validator devnet and the
// 4-validator network devnet (k = 3 pushes per seat, D33) with the same
// runners and job load, alternately (CIP11_BENCH_ROUNDS rounds, default
// 2; CIP11_BENCH_TOGETHER=1: both at once, a control in which both meet
// the same load on the shared cores), and logs the push latency (block
// commit → JobAck on the pushing validator) p50/p99 of each and the
// ratios, with the load average. Both must lose no job.
func TestPushLatencyRatio(t *testing.T) {
	if os.Getenv("CIP11_BENCH_PUSH") == "" {
		t.Skip("set CIP11_BENCH_PUSH=1 to run the push-latency harness")
	}
	const runners, dur = 50, 15 * time.Second
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.TrimSpace(string(b))
	}
	// One P per simulated validator (as cip11 devnet -validators sets):
	// four validators, their CometBFT nodes and fifty runners share one Go
	// runtime here, where each would have its own machine. Both devnets run
	// with the same setting; CIP11_BENCH_PROCS overrides it.
	procs := max(runtime.NumCPU(), 4)
	if v, err := strconv.Atoi(os.Getenv("CIP11_BENCH_PROCS")); err == nil && v > 0 {
		procs = v
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	t.Logf("GOMAXPROCS %d on %d CPUs", procs, runtime.NumCPU())
	var singleAll, netAll, singleSent, netSent, singleServe, netServe job.Histogram
	ms := func(h *job.Histogram, q uint64) float64 { return float64(h.Quantile(q)) / 1000 }
	// CIP11_BENCH_TOGETHER=1 runs the two devnets at once (a control: both
	// meet the same load on the shared cores) instead of one after the other.
	together := os.Getenv("CIP11_BENCH_TOGETHER") != ""
	if together {
		t.Logf("CIP11_BENCH_TOGETHER: both devnets run at once")
	}
	tc, _ := time.ParseDuration(os.Getenv("CIP11_BENCH_COMMIT"))
	for round := range rounds() {
		var single *Report
		var net *NetworkReport
		var serr, nerr error
		runSingle := func() {
			single, serr = Run(context.Background(), Config{Runners: runners, Duration: dur, NoSync: true, Seed: uint64(10 + round)})
		}
		runNet := func() {
			net, nerr = RunNetwork(context.Background(), NetworkConfig{Validators: 4, Runners: runners, Duration: dur, NoSync: true, Seed: uint64(10 + round), TimeoutCommit: tc})
		}
		if together {
			done := make(chan struct{})
			go func() { defer close(done); runSingle() }()
			runNet()
			<-done
		} else {
			runSingle()
			if serr == nil {
				runNet()
			}
		}
		if err := errors.Join(serr, nerr); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d single: p50 %.2f ms p99 %.2f ms, %d pushes, lost %d (load %s)", round, single.PushP50Millis, single.PushP99Millis, single.Pushed, single.Lost, load())
		t.Logf("round %d network k=3: p50 %.2f ms p99 %.2f ms, %d pushes over %d seats, lost %d, block p50 %.1f ms (load %s)", round,
			net.PushP50Millis, net.PushP99Millis, net.Pushes, net.Seats, net.Lost, net.BlockP50Millis, load())
		if single.Lost != 0 || net.Lost != 0 {
			t.Fatalf("lost jobs: single %d, network %d", single.Lost, net.Lost)
		}
		t.Logf("round %d ratio network/single: p50 %.2f, p99 %.2f", round, net.PushP50Millis/single.PushP50Millis, net.PushP99Millis/single.PushP99Millis)
		t.Logf("round %d parts: sent (commit → assignment written) single p50 %.2f p99 %.2f, network p50 %.2f p99 %.2f ms; served (assignment read → ack written) single p50 %.2f p99 %.2f, network p50 %.2f p99 %.2f ms; still-assigned checks asked of the chain: single %d, network %d",
			round, ms(&single.SentMicros, 500), ms(&single.SentMicros, 990), ms(&net.SentMicros, 500), ms(&net.SentMicros, 990),
			ms(&single.ServeMicros, 500), ms(&single.ServeMicros, 990), ms(&net.ServeMicros, 500), ms(&net.ServeMicros, 990),
			single.RunnerChainChecks, net.RunnerChainChecks)
		singleAll.Merge(&single.PushMicros)
		netAll.Merge(&net.PushMicros)
		singleSent.Merge(&single.SentMicros)
		netSent.Merge(&net.SentMicros)
		singleServe.Merge(&single.ServeMicros)
		netServe.Merge(&net.ServeMicros)
	}
	if singleAll.Count() == 0 || netAll.Count() == 0 {
		t.Fatal("no push latencies recorded")
	}
	t.Logf("pooled parts: sent single p50 %.2f p99 %.2f, network p50 %.2f p99 %.2f ms; served single p50 %.2f p99 %.2f, network p50 %.2f p99 %.2f ms",
		ms(&singleSent, 500), ms(&singleSent, 990), ms(&netSent, 500), ms(&netSent, 990),
		ms(&singleServe, 500), ms(&singleServe, 990), ms(&netServe, 500), ms(&netServe, 990))
	t.Logf("pooled over %d rounds: single p50 %.2f p99 %.2f ms (%d acks); network p50 %.2f p99 %.2f ms (%d acks); ratio p50 %.2f, p99 %.2f (load %s)",
		rounds(), ms(&singleAll, 500), ms(&singleAll, 990), singleAll.Count(), ms(&netAll, 500), ms(&netAll, 990), netAll.Count(),
		ms(&netAll, 500)/ms(&singleAll, 500), ms(&netAll, 990)/ms(&singleAll, 990), load())
}

// rounds is CIP11_BENCH_ROUNDS (default 2).
func rounds() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("CIP11_BENCH_ROUNDS"), &n); err != nil || n < 1 {
		return 2
	}
	return n
}
